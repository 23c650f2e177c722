package io.csiorchestrator.cli.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.cli.Cluster;
import io.csiorchestrator.cli.Http;
import io.csiorchestrator.cli.Main;
import io.csiorchestrator.cli.Mounts;
import io.csiorchestrator.cli.Wait;
import io.csiorchestrator.localinfra.PostgresMain;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * {@code ./csi up}'s state across crashes and restarts, through the CLI's own commands ({@link Main#run}) on a
 * system in {@code target/up-state-*} (services on free ports): Kafka and PostgreSQL as separate processes with
 * their state under the work dir, PostgreSQL with fsync and synchronous commit.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class UpStateIT {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Duration ANSWER = Duration.ofSeconds(90);

    private Path work;

    record Run(int code, String out, String err) {
        @Override
        public String toString() {
            return "exit " + code + "\n--- out\n" + out + "--- err\n" + err;
        }
    }

    @BeforeAll
    void up() throws IOException {
        work = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "up-state-");
        Run up = csi("up", "--work-dir", work.toString(), "--free-ports", "--fresh");
        assertEquals(0, up.code(), up.toString());
    }

    @AfterAll
    void down() {
        if (work != null) {
            Run down = csi("down", "--work-dir", work.toString());
            Mounts.unmountAllUnder(work);
            assertEquals(0, down.code(), down.toString());
            assertEquals(List.of(), Mounts.under(work));
        }
    }

    /**
     * {@code up} is secure by default and as easy as before: it leaves an admin token and the signing key that only
     * their owner reads (0600, in a 0700 directory); claim-service and plugin-registry-service answer 401 to a call
     * without a token, and the operator commands, which find the work dir's token by themselves, are answered.
     */
    @Test
    @Order(0)
    void upWritesTheAdminTokenAndKeysForTheOwnerOnlyAndTheServicesWantAToken() throws Exception {
        assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(work.resolve(Cluster.ADMIN_TOKEN))));
        assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(work.resolve(Cluster.SECURITY_DIR).resolve("signing.pem"))));
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(work.resolve(Cluster.SECURITY_DIR))));
        Properties e = endpoints();
        var http = java.net.http.HttpClient.newHttpClient();
        for (String url : List.of(e.getProperty("claims.url") + "/v1/volumes", e.getProperty("registry.url") + "/v1/plugins")) {
            int status = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url)).build(),
                    java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
            assertEquals(401, status, url + " without a token");
        }
        Run volumes = csi("volume", "status", "--work-dir", work.toString());
        assertEquals(0, volumes.code(), volumes.toString());
        Run plugins = csi("plugin", "status", "--work-dir", work.toString());
        assertEquals(0, plugins.code(), plugins.toString());
    }

    /**
     * Node leases are on by default (issue 19): {@code up} returns only once every worker is ready, and a worker is
     * ready only with a lease plugin-registry-service granted, so right after {@code up} {@code node status} lists
     * node-1 and node-2 with a valid lease (not "No nodes", nor "fencing off").
     */
    @Test
    @Order(0)
    void upWaitsForEveryNodesLeaseAndNodeStatusListsThem() {
        Run nodes = csi("node", "status", "--work-dir", work.toString());
        assertEquals(0, nodes.code(), nodes.toString());
        for (String node : Cluster.NODES) {
            assertTrue(nodes.out().lines().anyMatch(l -> l.matches(node + "\\s+\\d+\\s+valid\\s+.*")), nodes.out());
        }
        assertFalse(nodes.out().contains("fencing off"), nodes.out());
    }

    /**
     * A claim answered ready is kept by a PostgreSQL server killed with SIGKILL (the postmaster and every one of
     * its processes) the moment the answer arrived: after {@code ./csi restart postgres} claim-service reports
     * the claim ready (its transition was committed durably before the answer was published).
     */
    @Test
    @Order(1)
    void claimAnsweredReadySurvivesAKill9OfPostgresAndItsRestart() throws Exception {
        registerVolume("crash-kept");
        Run claim = claim("crash-kept", "alloc-crash", "node-1");
        assertEquals(0, claim.code(), claim.toString()); // before the kill: a failed claim leaves PostgreSQL running
        long postmaster = PostgresMain.postmasterPid(work.resolve(Cluster.POSTGRES).resolve("data")).orElseThrow();
        List<ProcessHandle> server = new ArrayList<>();
        ProcessHandle.of(postmaster).ifPresent(server::add);
        server.addAll(server.get(0).descendants().toList());
        server.forEach(ProcessHandle::destroyForcibly); // SIGKILL, right after the ready answer
        for (ProcessHandle process : server) {
            process.onExit().get(30, TimeUnit.SECONDS);
        }

        Run restart = csi("restart", "postgres", "--work-dir", work.toString());
        assertEquals(0, restart.code(), restart.toString());

        JsonNode held = awaitClaim("crash-kept", "alloc-crash");
        assertEquals("ready", held.path("state").asText().toLowerCase(), held.toString());
    }

    /**
     * {@code ./csi down} and {@code ./csi up} keep a volume registration, its ready claim and Kafka's claim-status
     * records; {@code ./csi up --fresh} then starts with no volume and no claim-status record.
     */
    /**
     * {@code ./csi restart kafka} brings the broker back on its port with its log: the claim-status records
     * written before are still there, and the running services and workers answer a release sent after it.
     */
    @Test
    @Order(2)
    void kafkaRestartKeepsItsRecordsAndTheServicesAnswerOnItsPort() throws Exception {
        registerVolume("broker-kept");
        Run claim = claim("broker-kept", "alloc-broker", "node-1");
        assertEquals(0, claim.code(), claim.toString());
        long statusRecords = endOffsets(Cluster.TOPIC_PREFIX + "claim-status");

        Run restart = csi("restart", "kafka", "--work-dir", work.toString());
        assertEquals(0, restart.code(), restart.toString());

        assertTrue(endOffsets(Cluster.TOPIC_PREFIX + "claim-status") >= statusRecords,
                "claim-status records were lost by the restart");
        Run release = csi(withEndpoints("volume", "release", "broker-kept", "--alloc", "alloc-broker",
                "--timeout", String.valueOf(ANSWER.toSeconds())));
        assertEquals(0, release.code(), release.toString());
    }

    @Test
    @Order(3)
    void downThenUpKeepsVolumesClaimsAndRecordsAndUpFreshStartsEmpty() throws Exception {
        registerVolume("restart-kept");
        Run claim = claim("restart-kept", "alloc-kept", "node-2");
        assertEquals(0, claim.code(), claim.toString());
        long statusRecords = endOffsets(Cluster.TOPIC_PREFIX + "claim-status");
        assertTrue(statusRecords > 0, "no claim-status record before the restart");

        java.nio.file.Path sealKey = work.resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR)
                .resolve("service-claim-service.seal.key");
        String sealing = Files.readString(sealKey);

        Run down = csi("down", "--work-dir", work.toString());
        assertEquals(0, down.code(), down.toString());
        Run up = csi("up", "--work-dir", work.toString(), "--free-ports");
        assertEquals(0, up.code(), up.toString());
        assertTrue(up.out().contains("keeping the state in " + work), up.out());
        assertEquals(sealing, Files.readString(sealKey), "up keeps claim-service's sealing keys");
        // up prints the status page's address, and the page is there; and how to log in: ./csi status-page, or the
        // admin token's file (its path, never the token: issue 35 item 1).
        String pageLine = up.out().lines().filter(l -> l.startsWith("status page ")).findFirst().orElseThrow(() ->
                new AssertionError("no status page line in\n" + up.out()));
        String page = pageLine.substring("status page ".length()).trim().split("\\s+")[0];
        assertTrue(pageLine.contains("./csi status-page") && pageLine.contains(work.resolve(Cluster.ADMIN_TOKEN).toString()),
                pageLine);
        String adminToken = Files.readString(work.resolve(Cluster.ADMIN_TOKEN)).strip();
        assertFalse(up.out().contains(adminToken.substring(adminToken.lastIndexOf('.') + 1)), "up printed the admin token");
        assertEquals(endpoints().getProperty("claims.url") + "/status/", page);
        Http.Response served = new Http("status page", page).get("");
        assertTrue(served.status() == 200 && served.raw().contains("csi-orchestrator status"), served.raw());
        // A claim with a mount flag sealed for claim-service's key (up's trust file, found through --work-dir) is
        // accepted after the restart: what was sealed before still opens.
        Run flagged = csi(withEndpoints("volume", "claim", "restart-kept", "--alloc", "alloc-flags", "--node", "node-1",
                "--mode", "read", "--mount-flag", "noatime", "--work-dir", work.toString(),
                "--timeout", String.valueOf(ANSWER.toSeconds())));
        assertEquals(0, flagged.code(), flagged.toString());

        assertEquals("ready", awaitClaim("restart-kept", "alloc-kept").path("state").asText().toLowerCase());
        assertTrue(endOffsets(Cluster.TOPIC_PREFIX + "claim-status") >= statusRecords,
                "claim-status records were lost across the restart");

        Run downAgain = csi("down", "--work-dir", work.toString());
        assertEquals(0, downAgain.code(), downAgain.toString());
        Run fresh = csi("up", "--work-dir", work.toString(), "--free-ports", "--fresh");
        assertEquals(0, fresh.code(), fresh.toString());
        assertTrue(fresh.out().contains("starting empty"), fresh.out());
        Run list = csi(withEndpoints("volume", "status", "-json"));
        assertEquals(0, list.code(), list.toString());
        assertEquals(0, MAPPER.readTree(list.out()).size(), list.out());
        assertEquals(0, endOffsets(Cluster.TOPIC_PREFIX + "claim-status"), "claim-status has records after --fresh");
    }

    /**
     * {@code ./csi bench --rate} on the running system, a short open-loop load at a low rate (4 volumes, 1 op/s
     * for 4 s, each claim held 7 s): exit 0, every claim and every release answered (none unanswered or unsent),
     * and the report complete in the output and the JSON: claim and release percentiles, offered and achieved
     * rate, CPU per operation and RSS of every process of the system, the floor's Kafka hop, commit and plugin
     * RPC times with P50 / floor.
     */
    @Test
    @Order(4)
    void benchAtALowRateAnswersEveryClaimAndReportsEveryFigure() throws Exception {
        Path json = work.resolve("bench.json");
        Run bench = csi("bench", "--work-dir", work.toString(), "--rate", "1", "--duration", "4s", "--volumes", "4",
                "--hold", "7s", "--drain", "90s", "--json", json.toString());
        assertEquals(0, bench.code(), bench.toString());
        JsonNode r = MAPPER.readTree(json.toFile());

        assertEquals(8, r.path("operationsPlanned").asInt(), r.toString());
        assertEquals(8, r.path("operationsSent").asInt(), r.toString());
        long claims = 0;
        long releases = 0;
        for (var e : (Iterable<Map.Entry<String, JsonNode>>) r.path("outcomes")::fields) {
            assertTrue(!e.getKey().contains("unanswered") && !e.getKey().contains("not sent"), r.path("outcomes").toString());
            if (e.getKey().startsWith("claim ")) {
                claims += e.getValue().asLong();
            } else if (e.getKey().startsWith("release ")) {
                releases += e.getValue().asLong();
            }
        }
        assertEquals(4, claims, "claims answered: " + r.path("outcomes"));
        assertEquals(4, releases, "releases answered: " + r.path("outcomes"));
        assertEquals(4, r.path("claim").path("count").asLong() + countStarting(r.path("nonReady"), "claim "),
                "claims in the latency histogram plus claims not ready: " + r);
        for (String kind : List.of("claim", "release")) {
            for (String p : List.of("p50Ms", "p90Ms", "p99Ms", "p999Ms", "maxMs")) {
                assertTrue(r.path(kind).path(p).asDouble() > 0, kind + " " + p + " in " + r.path(kind));
            }
        }
        assertTrue(r.path("offeredRate").asDouble() > 0 && r.path("achievedRate").asDouble() > 0, r.toString());

        List<String> names = new ArrayList<>();
        for (JsonNode proc : r.path("processes")) {
            names.add(proc.path("name").asText());
            if (!proc.path("name").asText().equals("total")) {
                assertTrue(proc.has("cpuMsPerOp") && proc.path("rssMb").asDouble() > 0, proc.toString());
            }
        }
        assertTrue(names.containsAll(List.of("kafka", "postgresql server", "plugin-registry-service", "claim-service",
                "hostpath-node-1", "hostpath-node-2", "node-mount-worker-node-1", "node-mount-worker-node-2", "total")),
                names.toString());

        JsonNode floor = r.path("floor");
        assertTrue(floor.path("kafkaHopP50Ms").asDouble() > 0, floor.toString());
        assertTrue(floor.path("commitP50Ms").asDouble() > 0, floor.toString());
        assertTrue(floor.path("rpcMeanMs").has("NodeStageVolume") && floor.path("rpcMeanMs").has("NodeUnpublishVolume"),
                floor.toString());
        assertTrue(floor.path("claim").path("p50OverFloor").asDouble() > 0, floor.toString());
        assertTrue(floor.path("release").path("p50OverFloor").asDouble() > 0, floor.toString());
        for (String line : List.of("claim → ready", "release → released", "claim-service", "P50 / floor")) {
            assertTrue(bench.out().contains(line), "'" + line + "' not in the output:\n" + bench.out());
        }
    }

    private static long countStarting(JsonNode counts, String prefix) {
        long n = 0;
        for (var e : (Iterable<Map.Entry<String, JsonNode>>) counts::fields) {
            n += e.getKey().startsWith(prefix) ? e.getValue().asLong() : 0;
        }
        return n;
    }

    // ------------------------------------------------------------------ helpers

    private void registerVolume(String name) throws IOException {
        Run create = csi("volume", "create", name, "--work-dir", work.toString(), "-json");
        assertEquals(0, create.code(), create.toString());
        String externalId = MAPPER.readTree(create.out()).path("externalId").asText();
        Path file = work.resolve(name + ".json");
        Files.writeString(file, MAPPER.writeValueAsString(Map.of("id", name, "name", name, "externalId", externalId,
                "pluginId", Cluster.PLUGIN_ID, "accessMode", "multi-node-single-writer", "attachmentMode", "file-system")));
        Run register = csi(withEndpoints("volume", "register", file.toString()));
        assertEquals(0, register.code(), register.toString());
    }

    private Run claim(String volume, String alloc, String node) {
        return csi(withEndpoints("volume", "claim", volume, "--alloc", alloc, "--node", node, "--mode", "write",
                "--timeout", String.valueOf(ANSWER.toSeconds())));
    }

    /** The claim of {@code alloc} on the volume, once claim-service answers with it (it may be reconnecting). */
    private JsonNode awaitClaim(String volume, String alloc) {
        return Wait.until("claim " + alloc + " on " + volume, ANSWER, null, () -> {
            Run status = csi(withEndpoints("volume", "status", volume, "-json"));
            if (status.err().contains("unknown to claim-service")) {
                throw new IllegalStateException("volume " + volume + " is gone: " + status.err());
            }
            if (status.code() != 0) {
                return Optional.empty(); // claim-service not answering yet (reconnecting to PostgreSQL)
            }
            try {
                for (JsonNode claim : MAPPER.readTree(status.out()).path("claims")) {
                    if (claim.path("allocationId").asText().equals(alloc)) {
                        return Optional.of(claim);
                    }
                }
                throw new IllegalStateException("claim " + alloc + " is not on " + volume + ": " + status.out());
            } catch (IOException e) {
                return Optional.empty();
            }
        });
    }

    private long endOffsets(String topic) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, endpoints().getProperty("kafka.bootstrap.servers"));
        // up's broker is closed (SASL_SSL): read the offsets as the operator, with the credential up issued
        io.csiorchestrator.events.KafkaClientSecurity.scram(io.csiorchestrator.events.KafkaAccess.OPERATOR,
                work.resolve("kafka-credentials").resolve(io.csiorchestrator.events.KafkaAccess.OPERATOR + ".password"),
                work.resolve("kafka/security/ca.pem")).applyTo(props);
        try (Admin admin = Admin.create(props)) {
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic).partitions().size();
            Map<TopicPartition, OffsetSpec> specs = new java.util.HashMap<>();
            for (int p = 0; p < partitions; p++) {
                specs.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            return admin.listOffsets(specs).all().get(30, TimeUnit.SECONDS).values().stream()
                    .mapToLong(info -> info.offset()).sum();
        }
    }

    private Properties endpoints() throws IOException {
        Properties props = new Properties();
        try (Reader reader = Files.newBufferedReader(work.resolve("endpoints.properties"))) {
            props.load(reader);
        }
        return props;
    }

    private String[] withEndpoints(String... command) {
        try {
            Properties e = endpoints();
            List<String> args = new ArrayList<>(List.of(command));
            args.addAll(List.of("--claims-url", e.getProperty("claims.url"), "--registry-url", e.getProperty("registry.url"),
                    "--kafka", e.getProperty("kafka.bootstrap.servers"), "--topic-prefix", e.getProperty("csi.topics.prefix"),
                "--token-file", work.resolve("admin.token").toString()));
            if (!args.contains("--work-dir")) {
                // up's work dir: the CLI signs claim requests with the scheduler key kept there (issue 20 item 5)
                args.addAll(List.of("--work-dir", work.toString()));
            }
            return args.toArray(String[]::new);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Run csi(String... argv) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(argv, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String o = out.toString(StandardCharsets.UTF_8);
        String e = err.toString(StandardCharsets.UTF_8);
        System.out.print(o);
        System.err.print(e);
        return new Run(code, o, e);
    }
}
