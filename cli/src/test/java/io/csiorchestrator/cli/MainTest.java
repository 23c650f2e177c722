package io.csiorchestrator.cli;

import io.csiorchestrator.localinfra.FreePorts;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
        String url = "http://127.0.0.1:" + FreePorts.take();
        Run r = run("volume", "status", "--claims-url", url);
        assertEquals(1, r.code());
        assertTrue(r.err().contains("claim-service unreachable at " + url), r.err());
        r = run("plugin", "status", "--registry-url", url);
        assertEquals(1, r.code());
        assertTrue(r.err().contains("plugin-registry-service unreachable at " + url), r.err());
    }

    /**
     * {@code volume status <id>} prints the volume condition and usage of each claiming node from claim-service's
     * answer (served here by a JDK HTTP server with a canned answer: a unit test of the rendering; the REST
     * side is claim-service's VolumeApiTest).
     */
    @Test
    void volumeStatusPrintsTheVolumeConditionAndUsagePerNode() throws Exception {
        com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        byte[] body = """
                {"namespace":"default","id":"v1","pluginId":"hostpath","schedulable":true,"health":"healthy",
                 "claims":[],"pastClaims":[],
                 "conditions":[{"nodeId":"node-2","pluginId":"hostpath","condition":"abnormal",
                                "message":"disk failing","since":"2026-11-24T17:00:00Z"}],
                 "usage":[{"nodeId":"node-2","pluginId":"hostpath","capacityBytes":1048576,"availableBytes":983040,
                           "usedBytes":65536,"inodes":4096,"inodesFree":4090,"inodesUsed":6,
                           "observedAt":"2026-11-24T17:01:00Z"},
                          {"nodeId":"node-3","pluginId":"hostpath","usedBytes":100,"observedAt":"2026-11-24T17:02:00Z"}]}
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
            // issue 34: the usage per claiming node, "-" for a figure the plugin did not report
            String[] usage = r.out().lines().dropWhile(l -> !l.equals("Volume usage")).toArray(String[]::new);
            assertTrue(usage.length >= 4, r.out());
            assertTrue(usage[1].matches("NODE\\s+USED\\s+AVAILABLE\\s+CAPACITY\\s+INODES USED\\s+INODES FREE\\s+INODES\\s+SEEN\\s*"),
                    usage[1]);
            assertTrue(usage[2].matches("node-2\\s+64\\.0 KiB\\s+960\\.0 KiB\\s+1\\.0 MiB\\s+6\\s+4090\\s+4096\\s+"
                    + "2026-11-24T17:01:00Z\\s*"), usage[2]);
            assertTrue(usage[3].matches("node-3\\s+100 B\\s+-\\s+-\\s+-\\s+-\\s+-\\s+2026-11-24T17:02:00Z\\s*"), usage[3]);
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

    /**
     * {@code --help} after a command prints the usage and does nothing else (it was ignored: {@code chaos --help}
     * started the full fault suite, {@code volume detach .. --help} sent the detach).
     */
    @Test
    void helpAfterACommandPrintsTheUsageAndDoesNothing() {
        Run r = run("volume", "detach", "v1", "node-1", "--help", "--claims-url", "http://127.0.0.1:1");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("chaos [--short]"), r.out());
        assertEquals("", r.err());
    }

    /**
     * Against a closed system (the work dir has up's Kafka credential and CA) but without a scheduler key, a claim is
     * refused before anything is sent, naming the missing key and what to do (the services would dead-letter the
     * unsigned request "unsigned" and the CLI would wait for an answer that never comes); nothing listens on the
     * Kafka address given, so a request actually sent would time out instead.
     */
    @Test
    void aClaimToAClosedSystemWithoutASchedulerKeyIsRefusedWithTheReason(@TempDir Path work) throws Exception {
        Files.createDirectories(work.resolve(CliKafkaSecurity.CREDENTIALS_DIR));
        Path password = CliKafkaSecurity.passwordFile(work, io.csiorchestrator.events.KafkaAccess.OPERATOR);
        Files.writeString(password, "pw\n");
        Files.setPosixFilePermissions(password, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Files.createDirectories(work.resolve(CliKafkaSecurity.TRUSTSTORE).getParent());
        Files.writeString(work.resolve(CliKafkaSecurity.TRUSTSTORE), "not read before the refusal\n");
        Run r = run("volume", "claim", "v", "--alloc", "a", "--node", "n", "--mode", "write", "--work-dir",
                work.toString(), "--kafka", "127.0.0.1:1", "--timeout", "5");
        assertEquals(1, r.code(), r.toString());
        assertTrue(r.err().contains("cannot sign the claim request: no scheduler key at " + work.resolve("security")),
                r.err());
        assertTrue(r.err().contains("CSI_IDENTITY_KEY_FILE"), r.err());
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

    /** A JDK HTTP server answering each path with a canned status and JSON body; records each request's URI. */
    private static final class CannedServer implements AutoCloseable {
        final com.sun.net.httpserver.HttpServer server;
        final java.util.List<String> requests = new java.util.concurrent.CopyOnWriteArrayList<>();

        CannedServer(Map<String, Map.Entry<Integer, String>> answers) throws java.io.IOException {
            server = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext("/", exchange -> {
                requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI());
                Map.Entry<Integer, String> answer = answers.getOrDefault(exchange.getRequestURI().getPath(),
                        Map.entry(404, "{\"errors\":[\"not found\"]}"));
                byte[] body = answer.getValue().getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().add("Content-Type", "application/json");
                exchange.sendResponseHeaders(answer.getKey(), body.length);
                exchange.getResponseBody().write(body);
                exchange.close();
            });
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    /**
     * A node whose plugin reports to plugin-registry-service but which holds no lease (its worker runs with
     * {@code csi.worker.fencing.enabled=false}) is listed by {@code node status} as "none (fencing off)" with a line
     * saying what that means, not left out (nor "No nodes" when no node holds a lease); {@code node status node-3}
     * says the same for one node and exits 0. Canned answers.
     */
    @Test
    void nodeStatusSaysFencingIsOffOnANodeWithPluginsButNoLease() throws Exception {
        String node1 = """
                {"nodeId":"node-1","lease":{"epoch":1,"state":"valid","lastRenewedAt":"2025-11-24T21:00:05Z",
                 "expiresAt":"2025-11-24T21:00:36.500Z","fencedEpoch":null}}""";
        String hostpath = """
                {"id":"hostpath","instances":[{"nodeId":"node-1","type":"monolith"},{"nodeId":"node-3","type":"node"}]}""";
        try (CannedServer registry = new CannedServer(Map.of("/v1/nodes", Map.entry(200, "[" + node1 + "]"),
                "/v1/plugins", Map.entry(200, "[{\"id\":\"hostpath\"}]"), "/v1/plugins/hostpath", Map.entry(200, hostpath)));
             CannedServer claims = new CannedServer(Map.of("/v1/status/placement", Map.entry(200, "[]")))) {
            Run all = run("node", "status", "--registry-url", registry.url(), "--claims-url", claims.url());
            assertEquals(0, all.code(), all.err());
            String[] lines = all.out().lines().toArray(String[]::new);
            assertEquals(6, lines.length, all.out());
            assertEquals("no node entries", lines[5], all.out()); // placement (issue 34): none written yet
            assertTrue(lines[1].matches("node-1\\s+1\\s+valid\\s+.*"), lines[1]);
            assertTrue(lines[2].matches("node-3\\s+-\\s+none \\(fencing off\\)\\s+-\\s+-\\s+-\\s*"), lines[2]);
            assertTrue(lines[3].startsWith("fencing off on node-3: the worker asks for no lease"
                    + " (csi.worker.fencing.enabled=false)"), lines[3]);

            Run one = run("node", "status", "node-3", "--registry-url", registry.url());
            assertEquals(0, one.code(), one.err());
            assertTrue(one.out().lines().anyMatch(l -> l.matches("lease state\\s+= none \\(fencing off\\)")), one.out());
        }
        try (CannedServer registry = new CannedServer(Map.of("/v1/nodes", Map.entry(200, "[]"),
                "/v1/plugins", Map.entry(200, "[]")));
             CannedServer claims = new CannedServer(Map.of())) {
            Run none = run("node", "status", "--registry-url", registry.url(), "--claims-url", claims.url());
            assertEquals("No nodes\nplacement: not read (claim-service answered 404)\n", none.out());
        }
    }

    /**
     * {@code node status} renders plugin-registry-service's {@code GET /v1/nodes} (the lease shape of the fencing
     * design: epoch, state, lastRenewedAt, expiresAt, fencedEpoch) as one row per node, a node without a lease as
     * dashes, and {@code node status node-2} its {@code GET /v1/nodes/node-2}; an unknown node exits 1 naming it.
     * Canned answers (a unit test of the rendering; the REST side is plugin-registry-service's).
     */
    @Test
    void nodeStatusPrintsEachNodesLease() throws Exception {
        String node1 = """
                {"nodeId":"node-1","lease":{"epoch":3,"state":"valid","lastRenewedAt":"2025-11-24T21:00:05Z",
                 "expiresAt":"2025-11-24T21:00:36.500Z","fencedEpoch":null}}""";
        String node2 = """
                {"nodeId":"node-2","lease":{"epoch":2,"state":"fenced","lastRenewedAt":"2025-11-24T20:58:00Z",
                 "expiresAt":"2025-11-24T20:58:31.500Z","fencedEpoch":2}}""";
        try (CannedServer registry = new CannedServer(Map.of(
                "/v1/nodes", Map.entry(200, "[" + node1 + "," + node2 + ",{\"nodeId\":\"node-3\",\"lease\":null}]"),
                "/v1/nodes/node-2", Map.entry(200, node2)));
             CannedServer claims = new CannedServer(Map.of("/v1/status/placement", Map.entry(200, """
                     [{"kind":"node","pluginId":"hp","nodeId":"node-2","accessibleTopology":{"zone":"a"},
                       "maxVolumes":2,"volumesHeld":1,"healthy":true}]""")))) {
            Run all = run("node", "status", "--registry-url", registry.url(), "--claims-url", claims.url());
            assertEquals(0, all.code(), all.err());
            String[] lines = all.out().lines().toArray(String[]::new);
            assertEquals(7, lines.length, all.out());
            // issue 34: then what schedulers read on the placement topic (claim-service's GET /v1/status/placement)
            assertEquals("placement (what schedulers read on the placement topic):", lines[4]);
            assertTrue(lines[6].matches("hp\\s+node-2\\s+zone=a\\s+1 / 2\\s+healthy\\s*"), lines[6]);
            assertTrue(lines[0].matches("NODE\\s+EPOCH\\s+STATE\\s+LAST RENEWAL\\s+EXPIRES\\s+FENCED EPOCH\\s*"), lines[0]);
            assertTrue(lines[1].matches("node-1\\s+3\\s+valid\\s+2025-11-24T21:00:05Z\\s+2025-11-24T21:00:36.500Z \\(\\d+ s ago\\)\\s+-\\s*"),
                    lines[1]);
            assertTrue(lines[2].matches("node-2\\s+2\\s+fenced\\s+2025-11-24T20:58:00Z\\s+2025-11-24T20:58:31.500Z \\(\\d+ s ago\\)\\s+2\\s*"),
                    lines[2]);
            assertTrue(lines[3].matches("node-3\\s+-\\s+-\\s+-\\s+-\\s+-\\s*"), lines[3]);

            Run one = run("node", "status", "node-2", "--registry-url", registry.url(), "--claims-url", claims.url());
            assertEquals(0, one.code(), one.err());
            assertTrue(one.out().lines().anyMatch(l -> l.matches("hp\\s+node-2\\s+zone=a\\s+1 / 2\\s+healthy\\s*")), one.out());
            assertTrue(one.out().lines().anyMatch(l -> l.matches("lease state\\s+= fenced")), one.out());
            assertTrue(one.out().lines().anyMatch(l -> l.matches("fenced epoch\\s+= 2")), one.out());
            assertTrue(one.out().lines().anyMatch(l -> l.matches("lease epoch\\s+= 2")), one.out());

            Run unknown = run("node", "status", "node-9", "--registry-url", registry.url());
            assertEquals(1, unknown.code());
            assertTrue(unknown.err().contains("node 'node-9' unknown to plugin-registry-service"), unknown.err());
            assertEquals(java.util.List.of("GET /v1/nodes", "GET /v1/plugins", "GET /v1/nodes/node-2",
                    "GET /v1/nodes/node-9", "GET /v1/plugins"), registry.requests);
        }
        assertEquals("in 12 s", Operator.relative(java.time.Instant.parse("2026-11-24T21:00:42Z"),
                java.time.Instant.parse("2026-11-24T21:00:30Z")));
        assertEquals("3 s ago", Operator.relative(java.time.Instant.parse("2026-11-24T21:00:27Z"),
                java.time.Instant.parse("2026-11-24T21:00:30Z")));
        assertEquals("now", Operator.relative(java.time.Instant.parse("2026-11-24T21:00:30.400Z"),
                java.time.Instant.parse("2026-11-24T21:00:30Z")));
    }

    /**
     * {@code volume detach fv node-1} posts {@code detach?node=node-1} and prints claim-service's answer claim by
     * claim (detaching / waiting with the time left); with {@code --force} it posts {@code force=true} and its
     * output, like the help text, says "only if the node is powered off", with who forced it as answered.
     * Canned answers (a unit test of the rendering; the REST side is claim-service's).
     */
    @Test
    void volumeDetachPrintsTheServicesAnswerAndForceSaysOnlyIfPoweredOff() throws Exception {
        String live = """
                {"volume":"default/fv","action":"unmounting on node-1; claims are freed once node-1 reports the unmount",
                 "claims":[{"allocationId":"a1","state":"detaching","reason":"unmount sent to node-1"},
                           {"allocationId":"a2","state":"waiting","reason":"waiting for node-1's lease to lapse",
                            "secondsLeft":41}]}""";
        String forced = """
                {"volume":"default/fv","action":"freed","forcedBy":"anonymous",
                 "allocations":["a1","a2"]}""";
        try (CannedServer claims = new CannedServer(Map.of("/v1/volumes/default/fv/detach", Map.entry(202, live)))) {
            Run r = run("volume", "detach", "fv", "node-1", "--claims-url", claims.url());
            assertEquals(0, r.code(), r.err());
            String[] lines = r.out().lines().toArray(String[]::new);
            assertEquals(4, lines.length, "the answer, a header and a row per claim: " + r.out());
            assertEquals("volume default/fv on node node-1: unmounting on node-1; claims are freed once node-1 reports"
                    + " the unmount", lines[0]);
            assertTrue(lines[1].matches("ALLOCATION\\s+STATE\\s+DETAIL\\s*"), lines[1]);
            assertTrue(lines[2].matches("a1\\s+detaching\\s+unmount sent to node-1\\s*"), lines[2]);
            assertTrue(lines[3].matches("a2\\s+waiting\\s+waiting for node-1's lease to lapse, 41 s left\\s*"), lines[3]);
            assertFalse(r.out().contains("powered off"), r.out());
            assertEquals(java.util.List.of("POST /v1/volumes/default/fv/detach?node=node-1"), claims.requests);
        }
        try (CannedServer claims = new CannedServer(Map.of("/v1/volumes/default/fv/detach", Map.entry(200, forced)))) {
            Run r = run("volume", "detach", "fv", "node-1", "--force", "--claims-url", claims.url());
            assertEquals(0, r.code(), r.err());
            assertTrue(r.out().lines().findFirst().orElseThrow().startsWith("forced: ")
                    && r.out().contains("only if the node is powered off"), r.out());
            assertTrue(r.out().contains("volume default/fv on node node-1: freed (forced by anonymous)"), r.out());
            assertTrue(r.out().contains("claims: a1, a2"), r.out());
            assertEquals(java.util.List.of("POST /v1/volumes/default/fv/detach?node=node-1&force=true"), claims.requests);
        }
        String help = run("help").out();
        assertTrue(help.contains("volume detach <id> <node> [--force]"), help);
        assertTrue(help.replaceAll("\\s+", " ").contains("--force frees them at once: only if the node is powered off"),
                help);
    }
}
