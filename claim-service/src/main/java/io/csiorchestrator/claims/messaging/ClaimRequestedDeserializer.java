package io.csiorchestrator.claims.messaging;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The {@code claim-requested} channel's value deserializer: UTF-8 text with plain mount flags blanked
 * ({@link PlainMountFlagsRedactor}), so a request that breaks the contract is dead-lettered without them.
 * A value withheld whole (not a JSON object) gets the header {@value #WITHHELD} with the reason, which
 * the handler dead-letters it with; a header of that name sent by a producer is dropped first. The value's raw
 * bytes stay with the record in memory ({@link io.csiorchestrator.support.security.RawValue}) for its signature.
 */
public final class ClaimRequestedDeserializer implements Deserializer<String> {

    /** Set on a record whose value was withheld whole: why. */
    public static final String WITHHELD = "csi-withheld";

    @Override
    public String deserialize(String topic, byte[] data) {
        return data == null ? null : PlainMountFlagsRedactor.redact(new String(data, StandardCharsets.UTF_8)).value();
    }

    @Override
    public String deserialize(String topic, Headers headers, byte[] data) {
        headers.remove(WITHHELD);
        // the signature covers these bytes, not the (redacted) text handed on (issue 33 item 2)
        io.csiorchestrator.support.security.RawValue.attach(headers, data);
        if (data == null) {
            return null;
        }
        PlainMountFlagsRedactor.Redacted redacted;
        try {
            redacted = PlainMountFlagsRedactor.redact(new String(data, StandardCharsets.UTF_8));
        } catch (RuntimeException e) {
            // A deserializer that throws stops the channel: the record is withheld and dead-lettered instead.
            headers.add(WITHHELD, ("could not be read (" + e.getClass().getSimpleName() + "): withheld")
                    .getBytes(StandardCharsets.UTF_8));
            return "{}";
        }
        if (redacted.withheld() != null) {
            headers.add(WITHHELD, redacted.withheld().getBytes(StandardCharsets.UTF_8));
        }
        return redacted.value();
    }
}
