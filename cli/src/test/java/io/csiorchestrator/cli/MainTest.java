package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MainTest {

    record Run(int code, String out, String err) {
    }

    static Run run(String... argv) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(argv, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void unreachableServiceIsNamed() {
        String url = "http://127.0.0.1:" + Cluster.freePort();
        Run r = run("volume", "status", "--claims-url", url);
        assertEquals(1, r.code());
        assertTrue(r.err().contains("claim-service unreachable at " + url), r.err());
        r = run("plugin", "status", "--registry-url", url);
        assertEquals(1, r.code());
        assertTrue(r.err().contains("plugin-registry-service unreachable at " + url), r.err());
    }

    /**
     * {@code volume status <id>} prints the volume condition of each claiming node from claim-service's
     * answer (served here by a JDK HTTP server with a canned answer: a unit test of the rendering; the REST
     * side is claim-service's VolumeApiTest).
     */
    @Test
    void volumeStatusPrintsTheVolumeConditionPerNode() throws Exception {
        com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        byte[] body = """
                {"namespace":"default","id":"v1","pluginId":"hostpath","schedulable":true,"health":"healthy",
                 "claims":[],"pastClaims":[],
                 "conditions":[{"nodeId":"node-2","pluginId":"hostpath","condition":"abnormal",
                                "message":"disk failing","since":"2026-11-24T17:00:00Z"}]}
                """.getBytes(StandardCharsets.UTF_8);
        server.createContext("/v1/volumes/default/v1", exchange -> {
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        try {
            Run r = run("volume", "status", "v1", "--claims-url", "http://127.0.0.1:" + server.getAddress().getPort());
            assertEquals(0, r.code(), r.err());
            String[] lines = r.out().lines().dropWhile(l -> !l.equals("Volume condition")).toArray(String[]::new);
            assertTrue(lines.length >= 3, r.out());
            assertTrue(lines[1].matches("NODE\\s+CONDITION\\s+SINCE\\s+MESSAGE\\s*"), lines[1]);
            assertTrue(lines[2].matches("node-2\\s+abnormal\\s+2026-11-24T17:00:00Z\\s+disk failing\\s*"), lines[2]);
        } finally {
            server.stop(0);
        }
    }

    /**
     * Credentials: {@code --token-file} wins over {@code CSI_TOKEN}, which wins over the admin token {@code up}
     * wrote in its work dir ({@code --work-dir} or .csi/up); none at all is null.
     */
    @Test
    void tokenComesFromTheFlagThenEnvThenTheWorkDirsAdminToken(@TempDir Path home) throws Exception {
        assertEquals(null, Endpoints.resolve(Args.parse(), Map.of(), home).token());
        Path up = Files.createDirectories(home.resolve(".csi/up"));
        Files.writeString(up.resolve(Cluster.ADMIN_TOKEN), "from-up\n");
        assertEquals("from-up", Endpoints.resolve(Args.parse(), Map.of(), home).token());
        Path other = Files.createDirectories(home.resolve("other"));
        Files.writeString(other.resolve(Cluster.ADMIN_TOKEN), "from-other-work-dir");
        assertEquals("from-other-work-dir", Endpoints.resolve(Args.parse("--work-dir", other.toString()), Map.of(), home).token());
        assertEquals("from-env", Endpoints.resolve(Args.parse(), Map.of("CSI_TOKEN", "from-env"), home).token());
        Path file = home.resolve("my.token");
        Files.writeString(file, "  from-file\n");
        assertEquals("from-file", Endpoints.resolve(Args.parse("--token-file", file.toString()),
                Map.of("CSI_TOKEN", "from-env"), home).token());
    }

    /**
     * {@code token issue} prints one RS256 token signed by the work dir's key (checked against the key set's
     * public key) with the roles, namespaces and lifetime asked for; an unknown role is a usage error. An operator
     * command then sends the work dir's admin token as {@code Authorization: Bearer} (seen by a JDK HTTP server).
     */
    @Test
    void tokenIssueSignsWithTheWorkDirKeyAndCommandsSendTheAdminToken(@TempDir Path home) throws Exception {
        Path work = home.resolve(".csi/up");
        var key = io.csiorchestrator.localinfra.AccessTokens.ensureKeySet(work.resolve(Cluster.SECURITY_DIR));
        Run r = run("token", "issue", "--role", "volume-read,volume-detach", "--namespace", "team-a", "--ttl", "2h",
                "--home", home.toString());
        assertEquals(0, r.code(), r.err());
        String token = r.out().strip();
        String[] parts = token.split("\\.");
        assertEquals(3, parts.length, token);
        java.security.Signature verify = java.security.Signature.getInstance("SHA256withRSA");
        verify.initVerify(key.publicKey());
        verify.update((parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
        assertTrue(verify.verify(java.util.Base64.getUrlDecoder().decode(parts[2])), "signed by the work dir's key");
        var claims = Http.MAPPER.readTree(java.util.Base64.getUrlDecoder().decode(parts[1]));
        assertEquals("csi-orchestrator", claims.path("iss").asText());
        assertEquals(java.util.List.of("volume-detach", "volume-read"),
                java.util.stream.StreamSupport.stream(claims.path("groups").spliterator(), false).map(n -> n.asText()).toList());
        assertEquals("team-a", claims.path("namespaces").path(0).asText());
        assertEquals(7200, claims.path("exp").asLong() - claims.path("iat").asLong());
        assertTrue(r.err().contains("token id " + claims.path("jti").asText()), r.err());

        Run bad = run("token", "issue", "--role", "root", "--home", home.toString());
        assertEquals(2, bad.code(), bad.err());
        assertTrue(bad.err().contains("unknown role 'root'"), bad.err());

        Files.writeString(work.resolve(Cluster.ADMIN_TOKEN), token + "\n");
        java.util.concurrent.atomic.AtomicReference<String> seen = new java.util.concurrent.atomic.AtomicReference<>();
        com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/volumes", exchange -> {
            seen.set(exchange.getRequestHeaders().getFirst("Authorization"));
            byte[] body = "[]".getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        try {
            Run status = run("volume", "status", "--home", home.toString(),
                    "--claims-url", "http://127.0.0.1:" + server.getAddress().getPort());
            assertEquals(0, status.code(), status.err());
            assertEquals("Bearer " + token, seen.get());
            assertTrue(!status.out().contains(parts[2]) && !status.err().contains(parts[2]), "the token is never printed");
        } finally {
            server.stop(0);
        }
    }

    @Test
    void usageErrorsExitTwo() {
        assertEquals(2, run("volume", "claim", "v", "--node", "n", "--mode", "write").code());
        Run r = run("volume", "claim", "v", "--alloc", "a", "--node", "n", "--mode", "sideways");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("--mode takes read or write"), r.err());
        r = run("volume", "status", "../etc");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("volume id '../etc'"), r.err());
        assertEquals(2, run("frobnicate").code());
        assertEquals(0, run("help").code());
    }

    /** A wrong node count for {@code up --simulated-nodes}, or a plugin delay without it, is refused before anything starts. */
    @Test
    void upRefusesABadSimulatedNodeCountBeforeStartingAnything(@TempDir Path work) {
        for (String count : new String[] {"0", "-3", "10001", "many"}) {
            Run r = run("up", "--simulated-nodes", count, "--work-dir", work.toString());
            assertEquals(2, r.code(), count + ": " + r.err());
            assertTrue(r.err().contains("--simulated-nodes must be a whole number from 1 to 10000"), r.err());
        }
        Run r = run("up", "--plugin-delay", "5ms", "--work-dir", work.toString());
        assertEquals(2, r.code(), r.err());
        assertTrue(r.err().contains("--plugin-delay goes with --simulated-nodes"), r.err());
        assertTrue(run("help").out().contains("up --simulated-nodes N"), "the usage names it");
        assertEquals(java.util.List.of(), java.util.Arrays.asList(work.toFile().list()), "nothing was started");
    }

    @Test
    void endpointsComeFromFlagsThenEnvThenTheUpFileThenDefaults(@TempDir Path home) throws Exception {
        Endpoints defaults = Endpoints.resolve(Args.parse(), Map.of(), home);
        assertEquals("http://localhost:8081", defaults.claimsUrl());
        assertEquals("http://localhost:8082", defaults.registryUrl());
        Path up = Files.createDirectories(home.resolve(".csi/up"));
        Files.writeString(up.resolve(Endpoints.FILE), "claims.url=http://127.0.0.1:8081\nkafka.bootstrap.servers=127.0.0.1:4242\n"
                + "csi.topics.prefix=csi.\n");
        Endpoints fromUp = Endpoints.resolve(Args.parse(), Map.of("CSI_CLAIMS_URL", "http://env:1/"), home);
        assertEquals("http://env:1", fromUp.claimsUrl());
        assertEquals("127.0.0.1:4242", fromUp.kafkaBootstrap());
        assertEquals("csi.", fromUp.topicPrefix());
        Endpoints flag = Endpoints.resolve(Args.parse("--kafka", "k:1"), Map.of(), home);
        assertEquals("k:1", flag.kafkaBootstrap());
    }
}
