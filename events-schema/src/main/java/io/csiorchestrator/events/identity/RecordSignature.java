package io.csiorchestrator.events.identity;

import io.csiorchestrator.events.CloudEventHeaders;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * The signature of a record (issue 20 items 3 and 5): Ed25519 by the producing principal's {@link IdentityKey}, in
 * two headers, {@value #KID} (the key id) and {@value #SIG} (base64 of the 64-byte signature). It covers, in this
 * order and each length-prefixed (so no two records share their signed bytes): a version tag, the record key, every
 * value of each of the headers {@link #SIGNED_HEADERS} ({@code ce_id}, {@code ce_type}, {@code ce_source},
 * {@code ce_specversion}, {@code ce_time}, {@code content-type}; absent, once or repeated alike) and the value bytes.
 * The topic is bound through {@code ce_type}. Other headers (the trace context, a dead letter's reasons) are not
 * covered. Verifying ({@link #verify}) gives the trusted key that signed, or an {@link Outcome} saying why not.
 */
public final class RecordSignature {

    public static final String KID = "csi-sig-kid";
    public static final String SIG = "csi-sig";
    public static final List<String> SIGNED_HEADERS = List.of(CloudEventHeaders.CE_ID, CloudEventHeaders.CE_TYPE,
            CloudEventHeaders.CE_SOURCE, CloudEventHeaders.CE_SPECVERSION, CloudEventHeaders.CE_TIME,
            CloudEventHeaders.CONTENT_TYPE);
    private static final byte[] VERSION = "csi-record-signature-v1".getBytes(StandardCharsets.UTF_8);

    private RecordSignature() {
    }

    /** Signs the record ({@code key}, {@code value}, its {@code headers} as they are now) and adds the two headers. */
    public static void sign(IdentityKey identity, String key, byte[] value, Headers headers) {
        headers.remove(KID);
        headers.remove(SIG);
        byte[] signature = identity.sign(signedBytes(key, value, headers));
        headers.add(KID, identity.kid().getBytes(StandardCharsets.UTF_8));
        headers.add(SIG, Base64.getEncoder().encode(signature));
    }

    /** Why a record is not believed; {@link #VALID} when it is. */
    public enum Outcome {
        VALID("valid"),
        UNSIGNED("unsigned"),
        UNKNOWN_KID("unknown kid"),
        WRONG_USE("key not for signatures"),
        BAD_SIGNATURE("bad signature");

        private final String reason;

        Outcome(String reason) {
            this.reason = reason;
        }

        /** The word a dead letter's reason starts with. */
        public String reason() {
            return reason;
        }

        /** The metric tag. */
        public String tag() {
            return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        }
    }

    /** The verdict on one record: its outcome, the kid it named (null when none) and the trusted key when valid. */
    public record Verdict(Outcome outcome, String kid, TrustSet.Entry signer) {
        public boolean valid() {
            return outcome == Outcome.VALID;
        }
    }

    /** Checks the record's signature against {@code trust}. Never throws for anything a record holds. */
    public static Verdict verify(TrustSet trust, String key, byte[] value, Headers headers) {
        String kid = single(headers, KID);
        String sig = single(headers, SIG);
        if (kid == null || sig == null) {
            return new Verdict(Outcome.UNSIGNED, kid, null);
        }
        TrustSet.Entry entry = trust.find(kid).orElse(null);
        if (entry == null) {
            return new Verdict(Outcome.UNKNOWN_KID, kid, null);
        }
        if (entry.use() != TrustSet.Use.SIG) {
            return new Verdict(Outcome.WRONG_USE, kid, null);
        }
        byte[] signature;
        try {
            signature = Base64.getDecoder().decode(sig);
        } catch (IllegalArgumentException e) {
            return new Verdict(Outcome.BAD_SIGNATURE, kid, null);
        }
        try {
            return Ed25519.verify(entry.key(), signedBytes(key, value, headers), signature)
                    ? new Verdict(Outcome.VALID, kid, entry) : new Verdict(Outcome.BAD_SIGNATURE, kid, null);
        } catch (RuntimeException e) {
            return new Verdict(Outcome.BAD_SIGNATURE, kid, null);
        }
    }

    /** The value of a header present exactly once, as UTF-8 text; null when absent, empty or repeated. */
    private static String single(Headers headers, String name) {
        List<Header> all = new ArrayList<>();
        headers.headers(name).forEach(all::add);
        if (all.size() != 1 || all.get(0).value() == null || all.get(0).value().length == 0) {
            return null;
        }
        return new String(all.get(0).value(), StandardCharsets.UTF_8);
    }

    /**
     * The bytes a record's signature covers (events-schema/CONTRACT.md, "Signed bytes"): the version tag, the key, each
     * signed header's values preceded by their count, the value; each field a 4-byte signed big-endian length (-1 for
     * null) and its bytes. Public for the contract's test vectors.
     */
    public static byte[] signedBytes(String key, byte[] value, Headers headers) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256 + (value == null ? 0 : value.length));
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            field(out, VERSION);
            field(out, key == null ? null : key.getBytes(StandardCharsets.UTF_8));
            for (String name : SIGNED_HEADERS) {
                List<byte[]> values = new ArrayList<>();
                headers.headers(name).forEach(h -> values.add(h.value()));
                out.writeInt(values.size());
                for (byte[] v : values) {
                    field(out, v);
                }
            }
            field(out, value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    private static void field(DataOutputStream out, byte[] bytes) throws IOException {
        if (bytes == null) {
            out.writeInt(-1);
        } else {
            out.writeInt(bytes.length);
            out.write(bytes);
        }
    }
}
