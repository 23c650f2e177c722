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

import io.csiorchestrator.events.SecretKeyring;

/** No AES key of the keyring format ({@code keyId:base64(32 bytes)}) is committed with the deployment files. */
class NoCommittedKeysTest {

    /** keyId:base64 of 32 bytes (44 characters, one '=' of padding), as SecretKeyring.parse reads it. */
    private static final Pattern KEY = Pattern.compile("([A-Za-z0-9][A-Za-z0-9._-]*):([A-Za-z0-9+/]{43}=)");

    @Test
    void theDetectorFindsARealKey() {
        byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        String keyring = "k1:" + Base64.getEncoder().encodeToString(bytes);
        SecretKeyring.parse(keyring, "k1"); // the contract accepts it ...
        assertFalse(keysIn("CSI_SECRETS_KEYRING: \"" + keyring + "\"").isEmpty(), "... and the detector sees it");
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
        }
    }

    @Test
    void theSecretTemplateHoldsOnlyPlaceholders() {
        Path template = kubernetesDir().resolve("secret.template.yaml");
        String text = read(template);
        assertTrue(text.contains("TEMPLATE"), "the template says it is one");
        Map<String, Object> secret = documents(template).stream()
                .filter(d -> "csi-secrets".equals(string(d, "metadata", "name")))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no Secret csi-secrets in " + template));
        assertEquals("Secret", secret.get("kind"));
        String keyring = string(secret, "stringData", "keyring");
        assertTrue(keyring.contains("REPLACE_ME"), "keyring is a placeholder: " + keyring);
        String activeKey = string(secret, "stringData", "active-key");
        assertThrows(RuntimeException.class, () -> SecretKeyring.parse(keyring, activeKey),
                "the placeholder must not be a usable keyring");
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
