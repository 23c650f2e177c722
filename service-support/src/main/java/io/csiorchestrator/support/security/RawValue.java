package io.csiorchestrator.support.security;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A record's value exactly as it came off the broker, kept beside the text the consumer reads (issue 33 item 2: a
 * record's signature covers its raw value bytes, not the value decoded as UTF-8 and encoded again, nor the text a
 * deserializer redacted). The value deserializer attaches it as an in-memory header object ({@link #attach}); the
 * handler takes it out again first thing ({@link #take}), so it never travels on (a dead-letter copy holds the
 * deserialized text only). Its {@link #value()} is empty and {@link #toString()} shows no bytes: the raw value of a
 * claim request may hold plain mount flags. A header of the same name sent by a producer is dropped.
 */
public final class RawValue implements Header {

    public static final String NAME = "csi-raw-value";
    private static final byte[] NONE = new byte[0];

    private final byte[] bytes;

    private RawValue(byte[] bytes) {
        this.bytes = bytes;
    }

    /** Keeps {@code data} (the value as read) with the record's {@code headers}, dropping any header of that name. */
    public static void attach(Headers headers, byte[] data) {
        headers.remove(NAME);
        if (data != null) {
            headers.add(new RawValue(data));
        }
    }

    /**
     * Takes the raw value out of {@code record}'s headers: the bytes attached by the deserializer; the value's UTF-8
     * bytes when none was attached (a channel with a plain deserializer); null for a record without a value.
     */
    public static byte[] take(ConsumerRecord<String, String> record) {
        byte[] raw = null;
        List<Header> all = new ArrayList<>();
        record.headers().headers(NAME).forEach(all::add);
        for (Header h : all) {
            if (h instanceof RawValue attached) {
                raw = attached.bytes;
            }
        }
        if (!all.isEmpty()) {
            record.headers().remove(NAME);
        }
        if (raw != null) {
            return raw;
        }
        return record.value() == null ? null : record.value().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String key() {
        return NAME;
    }

    @Override
    public byte[] value() {
        return NONE;
    }

    @Override
    public String toString() {
        return "RawValue[" + bytes.length + " bytes]";
    }

    /** A String deserializer that also keeps the raw value ({@link RawValue#attach}), for the channels of signed records. */
    public static final class Deserializer extends StringDeserializer {
        @Override
        public String deserialize(String topic, Headers headers, byte[] data) {
            attach(headers, data);
            return super.deserialize(topic, headers, data);
        }
    }
}
