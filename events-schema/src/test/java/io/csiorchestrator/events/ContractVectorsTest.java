package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.RecordSignature;
import io.csiorchestrator.events.identity.SealingKeys;
import io.csiorchestrator.events.identity.TrustSet;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The committed test vectors ({@value ContractVectors#FILE}) are exactly what the code makes (issue 33 item 2): a change
 * of the signed bytes, the signature or the sealing fails here until the file (and CONTRACT.md) is regenerated with
 * {@code -Dcsi.vectors.write=true}. The vectors also check out on their own: each signature verifies against the
 * vectors' trust file through {@link RecordSignature#verify}, the sealed value opens with claim-service's key, and the
 * fixed keys are RFC 8032's and RFC 7748's, whose published public keys and shared secret they must give.
 */
class ContractVectorsTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    @TempDir
    Path dir;

    @Test
    void theCommittedVectorsAreWhatTheCodeMakes() throws Exception {
        String generated = ContractVectors.generate(dir);
        Path committed = Path.of(ContractVectors.FILE);
        if (Boolean.getBoolean("csi.vectors.write")) {
            Files.writeString(committed, generated, StandardCharsets.UTF_8);
        }
        assertTrue(Files.exists(committed), committed.toAbsolutePath() + " is missing: run with -Dcsi.vectors.write=true");
        assertEquals(generated, Files.readString(committed, StandardCharsets.UTF_8), "the committed vectors drifted from"
                + " the code: regenerate with -Dcsi.vectors.write=true and update events-schema/CONTRACT.md");
    }

    @Test
    void eachVectorChecksOutAgainstTheConsumersCode() throws Exception {
        JsonNode vectors = JSON.readTree(Files.readString(Path.of(ContractVectors.FILE)));
        TrustSet trust = TrustSet.parse(vectors.path("keys").path("trustFile").toString());
        int records = 0;
        for (JsonNode r : vectors.path("records")) {
            Headers headers = new RecordHeaders();
            for (JsonNode h : r.path("headers")) {
                headers.add(h.path("name").asText(), h.path("value").isNull() ? null
                        : h.path("value").asText().getBytes(StandardCharsets.UTF_8));
            }
            String key = r.path("key").isNull() ? null : r.path("key").asText();
            byte[] value = r.path("value").isNull() ? null : r.path("value").asText().getBytes(StandardCharsets.UTF_8);
            assertEquals(r.path("signedBytesHex").asText(), HEX.formatHex(RecordSignature.signedBytes(key, value, headers)));
            headers.add(RecordSignature.KID, r.path("csi-sig-kid").asText().getBytes(StandardCharsets.UTF_8));
            headers.add(RecordSignature.SIG, r.path("csi-sig").asText().getBytes(StandardCharsets.UTF_8));
            assertEquals(RecordSignature.Outcome.VALID, RecordSignature.verify(trust, key, value, headers).outcome(),
                    r.path("about").asText());
            records++;
        }
        assertEquals(3, records);

        // the fixed keys are the RFCs' own, so their published results hold (an independent check of the key encodings)
        IdentityKey signer = ContractVectors.signingKey(dir);
        assertEquals("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
                HEX.formatHex(Base64.getUrlDecoder().decode(vectors.path("keys").path("schedulerSigningKey").path("x").asText())));
        assertEquals("acme.k1", signer.kid());
        JsonNode sealed = vectors.path("sealedMountFlags");
        assertEquals("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f", sealed.path("ephemeralPublicKeyHex").asText());
        assertEquals("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", sealed.path("recipientPublicKeyHex").asText());
        assertEquals("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742", sealed.path("sharedSecretHex").asText());

        Path keyFile = dir.resolve("claim-service.seal");
        Files.writeString(keyFile, "{\"sub\":\"claim-service\",\"keys\":[" + vectors.path("keys")
                .path("claimServiceSealingPrivateKey") + "]}");
        SealedSecrets envelope = JSON.treeToValue(sealed.path("sealed"), SealedSecrets.class);
        SecretPayload opened = SecretSealer.open(envelope, SealingKeys.read(keyFile), "default", "vol-1");
        assertEquals(List.of("noatime", "nodiratime"), opened.mountFlags());
    }
}
