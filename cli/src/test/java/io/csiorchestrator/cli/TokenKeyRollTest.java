package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./csi token init} and {@code token roll-key}: the key set the services verify with keeps the previous
 * public key while a key rolls (tokens it signed stay valid), new tokens carry the new key's id, and
 * {@code --retire} leaves only the signing key.
 */
class TokenKeyRollTest {

    @Test
    void rollKeepsThePreviousKeyInTheSetUntilRetired(@TempDir Path work) throws Exception {
        assertEquals(0, csi("token", "init", "--work-dir", work.toString()));
        Path jwks = work.resolve(Cluster.SECURITY_DIR).resolve("jwks.json");
        String before = issue(work);
        assertEquals(List.of(kid(before)), kids(jwks));
        assertTrue(Files.isRegularFile(work.resolve(Cluster.ADMIN_TOKEN)));

        assertEquals(0, csi("token", "roll-key", "--work-dir", work.toString()));
        String after = issue(work);
        assertNotEquals(kid(before), kid(after), "new tokens are signed with the new key");
        assertEquals(2, kids(jwks).size(), kids(jwks).toString());
        assertTrue(kids(jwks).containsAll(List.of(kid(before), kid(after))), kids(jwks).toString());

        assertEquals(0, csi("token", "roll-key", "--retire", "--work-dir", work.toString()));
        assertEquals(List.of(kid(after)), kids(jwks), "only the signing key is left");
    }

    private static String issue(Path work) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"token", "issue", "--role", "admin", "--work-dir", work.toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(new ByteArrayOutputStream()));
        assertEquals(0, code);
        return out.toString(StandardCharsets.UTF_8).strip();
    }

    private static int csi(String... argv) {
        return Main.run(argv, new PrintStream(new ByteArrayOutputStream()), new PrintStream(new ByteArrayOutputStream()));
    }

    private static String kid(String token) throws Exception {
        return Http.MAPPER.readTree(Base64.getUrlDecoder().decode(token.split("\\.")[0])).path("kid").asText();
    }

    private static List<String> kids(Path jwks) throws Exception {
        List<String> kids = new ArrayList<>();
        for (JsonNode key : Http.MAPPER.readTree(Files.readString(jwks)).path("keys")) {
            kids.add(key.path("kid").asText());
        }
        return kids;
    }
}
