package io.csiorchestrator.events.identity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Record signatures: what a valid signature covers, and each way a record fails verification. */
class RecordSignatureTest {

    private static final IdentityKey NODE_1 = IdentityKey.generate(Principal.node("node-1"), "node-1.k1");
    private static final IdentityKey NODE_2 = IdentityKey.generate(Principal.node("node-2"), "node-2.k1");
    private static final IdentityKey STRANGER = IdentityKey.generate(Principal.node("node-2"), "node-2.k9");
    private static final TrustSet TRUST = TrustSet.of(List.of(NODE_1.publicEntry(), NODE_2.publicEntry()));
    private static final byte[] VALUE = "{\"nodeId\":\"node-1\"}".getBytes(StandardCharsets.UTF_8);

    private static Headers signed(IdentityKey key) {
        Headers headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.MOUNT_DONE, "/node/node-1").writeTo(headers);
        RecordSignature.sign(key, "node-1", VALUE, headers);
        return headers;
    }

    /** A record signed by a trusted key verifies, and the verdict names that key's principal. */
    @Test
    void signedRecordVerifiesAsItsSigner() {
        RecordSignature.Verdict verdict = RecordSignature.verify(TRUST, "node-1", VALUE, signed(NODE_1));
        assertEquals(RecordSignature.Outcome.VALID, verdict.outcome());
        assertEquals(Principal.node("node-1"), verdict.signer().principal());
    }

    /** Without the signature headers the record is unsigned. */
    @Test
    void recordWithoutSignatureIsUnsigned() {
        Headers headers = signed(NODE_1);
        headers.remove(RecordSignature.SIG);
        assertEquals(RecordSignature.Outcome.UNSIGNED, RecordSignature.verify(TRUST, "node-1", VALUE, headers).outcome());
    }

    /** A key id outside the trust set is unknown, whether or not the signature would check. */
    @Test
    void keyOutsideTheTrustSetIsUnknown() {
        assertEquals(RecordSignature.Outcome.UNKNOWN_KID,
                RecordSignature.verify(TRUST, "node-1", VALUE, signed(STRANGER)).outcome());
    }

    /** A signature made with one key but naming another's kid (a forgery) is a bad signature. */
    @Test
    void signatureNamingAnotherKeysKidIsBad() {
        Headers headers = signed(STRANGER);
        headers.remove(RecordSignature.KID);
        headers.add(RecordSignature.KID, "node-2.k1".getBytes(StandardCharsets.UTF_8));
        assertEquals(RecordSignature.Outcome.BAD_SIGNATURE, RecordSignature.verify(TRUST, "node-1", VALUE, headers).outcome());
    }

    /** Changing any signed header, the key or the value after signing breaks the signature. */
    @Test
    void everySignedPartIsCovered() {
        for (String name : RecordSignature.SIGNED_HEADERS) {
            Headers headers = signed(NODE_1);
            headers.remove(name);
            headers.add(name, "changed".getBytes(StandardCharsets.UTF_8));
            assertEquals(RecordSignature.Outcome.BAD_SIGNATURE,
                    RecordSignature.verify(TRUST, "node-1", VALUE, headers).outcome(), "altered " + name);
        }
        Headers repeated = signed(NODE_1);
        repeated.add(CloudEventHeaders.CE_ID, "second".getBytes(StandardCharsets.UTF_8));
        assertEquals(RecordSignature.Outcome.BAD_SIGNATURE, RecordSignature.verify(TRUST, "node-1", VALUE, repeated).outcome(),
                "a repeated ce_id");
        assertEquals(RecordSignature.Outcome.BAD_SIGNATURE,
                RecordSignature.verify(TRUST, "node-2", VALUE, signed(NODE_1)).outcome(), "another key");
        byte[] other = "{\"nodeId\":\"node-2\"}".getBytes(StandardCharsets.UTF_8);
        assertEquals(RecordSignature.Outcome.BAD_SIGNATURE,
                RecordSignature.verify(TRUST, "node-1", other, signed(NODE_1)).outcome(), "another value");
    }

    /** Headers outside the signed list (a trace context) may change without breaking the signature. */
    @Test
    void unsignedHeadersMayChange() {
        Headers headers = signed(NODE_1);
        headers.add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".getBytes(StandardCharsets.UTF_8));
        assertTrue(RecordSignature.verify(TRUST, "node-1", VALUE, headers).valid());
    }

    /** A key file round-trips with mode 0600 and signs what the trust file's entry verifies; a rotation keeps both kids. */
    @Test
    void keyAndTrustFilesRoundTrip(@TempDir Path dir) throws Exception {
        Path keyFile = dir.resolve("node-1.key");
        NODE_1.write(keyFile);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(keyFile)));
        IdentityKey read = IdentityKey.read(keyFile);
        assertEquals("node-1.k1", read.kid());
        IdentityKey rotated = IdentityKey.generate(Principal.node("node-1"), "node-1.k2");
        Path trustFile = dir.resolve("trust.json");
        TRUST.with(rotated.publicEntry()).write(trustFile);
        TrustSet trust = TrustSet.read(trustFile);
        assertTrue(RecordSignature.verify(trust, "node-1", VALUE, signed(read)).valid(), "the old kid");
        assertTrue(RecordSignature.verify(trust, "node-1", VALUE, signed(rotated)).valid(), "the new kid");
        assertEquals(RecordSignature.Outcome.UNKNOWN_KID,
                RecordSignature.verify(trust.without("node-1.k1"), "node-1", VALUE, signed(read)).outcome(), "retired");
        assertTrue(!read.toString().contains(Files.readString(keyFile).replaceAll(".*\"d\":\"([^\"]+)\".*\\s*", "$1")));
    }

    /** A trust file entry without a principal is refused, naming the entry. */
    @Test
    void trustFileEntryWithoutPrincipalIsRefused() {
        String json = TRUST.toJson().replaceFirst("\"sub\" : \"node:node-1\",", "");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TrustSet.parse(json));
        assertTrue(e.getMessage().contains("kid node-1.k1"), e.getMessage());
    }
}
