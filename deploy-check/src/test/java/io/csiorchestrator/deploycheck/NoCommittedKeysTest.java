package io.csiorchestrator.deploycheck;

import static io.csiorchestrator.deploycheck.Manifests.documents;
import static io.csiorchestrator.deploycheck.Manifests.kubernetesDir;
import static io.csiorchestrator.deploycheck.Manifests.read;
import static io.csiorchestrator.deploycheck.Manifests.root;
import static io.csiorchestrator.deploycheck.Manifests.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;


/**
 * No key is committed with the deployment files: no AES key of the former keyring format ({@code keyId:base64(32
 * bytes)}), no private JSON Web Key (a {@code "d"} member: signing or sealing keys), no shared-keyring Secret.
 */
class NoCommittedKeysTest {

    /** keyId:base64 of 32 bytes (44 characters, one '=' of padding), the former shared keyring's format. */
    /** A JSON Web Key's private member ({@code "d": "<base64url>"}). */
    private static final Pattern PRIVATE_JWK = Pattern.compile("\"d\"\\s*:\\s*\"[A-Za-z0-9_=-]{4,}\"");
    private static final Pattern KEY = Pattern.compile("([A-Za-z0-9][A-Za-z0-9._-]*):([A-Za-z0-9+/]{43}=)");

    @Test
    void theDetectorFindsARealKey() {
        byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        String keyring = "k1:" + Base64.getEncoder().encodeToString(bytes);
        assertFalse(keysIn("CSI_SECRETS_KEYRING: \"" + keyring + "\"").isEmpty(), "the detector sees it");
        assertTrue(PRIVATE_JWK.matcher("{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"abc\",\"d\": \"c2VjcmV0\"}").find(),
                "and a private JSON Web Key");
    }

    @Test
    void noDeploymentFileHoldsAKey() throws IOException {
        List<Path> files = new ArrayList<>();
        files.add(root().resolve("docker-compose.yml"));
        try (Stream<Path> deploy = Files.walk(root().resolve("deploy"))) {
            deploy.filter(Files::isRegularFile).forEach(files::add);
        }
        assertTrue(files.size() > 5, "files checked: " + files);
        for (Path file : files) {
            assertEquals(List.of(), keysIn(read(file)), root().relativize(file) + " holds what looks like a keyring key");
            assertFalse(PRIVATE_JWK.matcher(read(file)).find(), root().relativize(file) + " holds a private JSON Web Key");
        }
    }

    /** The Secret template holds placeholders only, and no shared keyring Secret (issue 20 item 4: keys per recipient). */
    @Test
    void theSecretTemplateHoldsOnlyPlaceholdersAndNoSharedKeyring() {
        Path template = kubernetesDir().resolve("secret.template.yaml");
        String text = read(template);
        assertTrue(text.contains("TEMPLATE"), "the template says it is one");
        List<Map<String, Object>> docs = documents(template);
        assertTrue(docs.stream().noneMatch(d -> "csi-secrets".equals(string(d, "metadata", "name"))),
                "no shared keyring Secret csi-secrets");
        Map<String, Object> db = docs.stream().filter(d -> "csi-db".equals(string(d, "metadata", "name"))).findFirst()
                .orElseThrow(() -> new AssertionError("no Secret csi-db in " + template));
        assertEquals("Secret", db.get("kind"));
        assertTrue(string(db, "stringData", "claims-password").contains("REPLACE_ME"));
        assertTrue(text.contains("csi-claim-service-seal") && text.contains("./csi identity claim-service"),
                "the template says how to make claim-service's sealing key Secret");
    }

    private static List<String> keysIn(String text) {
        List<String> found = new ArrayList<>();
        Matcher matcher = KEY.matcher(text);
        while (matcher.find()) {
            byte[] decoded;
            try {
                decoded = Base64.getDecoder().decode(matcher.group(2));
            } catch (IllegalArgumentException notBase64) {
                continue;
            }
            if (decoded.length == 32) {
                found.add(matcher.group(1) + ":<redacted>");
            }
        }
        return found;
    }
}
