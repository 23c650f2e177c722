package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.Kraft;
import io.csiorchestrator.localinfra.PostgresMain;
import io.csiorchestrator.localinfra.StateDir;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.SynchronizedHistogram;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * {@code csi bench --rate R --duration D} and {@code csi bench --sweep}: open-loop load on a running system.
 *
 * <p>V volumes ({@code bench-000}...; created on the nodes' plugins and registered if missing) spread round
 * robin over the nodes the plugin registry knows for the plugin; each claimed for write on its node and
 * released, again and again, on the fixed schedule of {@link LoadSchedule}, sent by {@link OpenLoop}. Answers
 * (claim-status, matched by request id) are read on a separate consumer; latencies go from each request's due
 * time to its answer into HdrHistograms. Around the load: the CPU and RSS of every process of the system
 * ({@link ProcStats}, from {@code <work>/pids}), the workers' {@code csi_rpc_seconds}, and, before it, the
 * floor's Kafka hop and PostgreSQL commit ({@link Floor}).
 */
final class LoadBench {

    static final List<Double> SWEEP_RATES = List.of(10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0);
    private static final int PROBES = 100;
    private static final int PROBE_WARMUP = 20;
    private static final long HIGHEST_MICROS = TimeUnit.MINUTES.toMicros(10);
    private static final java.net.http.HttpClient METRICS = java.net.http.HttpClient.newBuilder()
            .version(java.net.http.HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(3)).build();

    private final Args args;
    private final Endpoints endpoints;
    private final Path work;
    private final PrintStream out;
    private final TopicCatalog topics;
    private final String namespace;
    private final String pluginId;
    private final int volumes;
    private final Duration drain;

    LoadBench(Args args, Endpoints endpoints, Path work, PrintStream out) {
        this.args = args;
        this.endpoints = endpoints;
        this.work = work;
        this.out = out;
        this.topics = new TopicCatalog(endpoints.topicPrefix());
        this.namespace = args.option("namespace").orElse("default");
        // --plugin, else the plugin of the system `up` started (endpoints file: hostpath, or simulated with
        // --simulated-nodes), else hostpath.
        this.pluginId = args.option("plugin").orElseGet(() -> upProperties().getProperty("plugin.id", Cluster.PLUGIN_ID));
        this.volumes = (int) Bench.parseLong(args, "volumes", 100, 1, 100_000);
        this.drain = Bench.parseDuration(args, "drain", Duration.ofSeconds(60));
    }

    // ------------------------------------------------------------------ entry points

    int run() throws Exception {
        double rate = Bench.parseRate(args.required("rate"));
        Duration duration = Bench.parseDuration(args, "duration", Duration.ofSeconds(30));
        Duration hold = Bench.parseDuration(args, "hold", Duration.ZERO);
        LoadSchedule.plan(rate, volumes, hold.toNanos(), duration.toNanos()); // fails early on a bad --hold
        Setup setup = setUp();
        ObjectNode report = runOnce(setup, rate, duration, hold);
        ObjectNode json = header("rate");
        json.setAll(report);
        Optional<Path> file = Bench.jsonFile(args);
        if (file.isPresent()) {
            writeJson(file.get(), json);
            out.println("JSON: " + file.get().toAbsolutePath());
        }
        return 0;
    }

    int sweep() throws Exception {
        Duration slo = Bench.parseDuration(args, "slo", Duration.ofMillis(250));
        Duration step = Bench.parseDuration(args, "step-duration", Duration.ofSeconds(20));
        Duration hold = Bench.parseDuration(args, "hold", Duration.ZERO);
        List<Double> rates = args.option("rates").map(LoadBench::parseRates).orElse(SWEEP_RATES);
        Path file = Bench.jsonFile(args).orElse(work.resolve("bench").resolve("sweep-"
                + java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")
                .format(java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC)) + ".json"));
        Setup setup = setUp();
        ObjectNode json = header("sweep");
        json.put("sloMs", slo.toMillis());
        json.put("stepDurationS", step.toMillis() / 1000.0);
        ArrayNode steps = json.putArray("steps");
        List<SweepChart.Point> points = new ArrayList<>();
        double held = 0;
        String stopped = "every step held";
        for (double rate : rates) {
            try {
                LoadSchedule.plan(rate, volumes, hold.toNanos(), step.toNanos());
            } catch (Args.UsageException e) {
                stopped = "rate " + fmt(rate) + ": " + e.getMessage();
                break;
            }
            out.println();
            out.println("== sweep step: offered " + fmt(rate) + " ops/s for " + step.toSeconds() + " s");
            ObjectNode result = runOnce(setup, rate, step, hold);
            steps.add(result);
            points.add(point(result));
            double p99 = result.path("claim").path("p99Ms").asDouble();
            long errors = result.path("nonReadyTotal").asLong();
            if (errors > 0) {
                stopped = "errors at " + fmt(rate) + " ops/s: " + result.path("nonReady");
                break;
            }
            if (p99 > slo.toMillis()) {
                stopped = "claim P99 " + fmt(p99) + " ms > SLO " + slo.toMillis() + " ms at " + fmt(rate) + " ops/s";
                break;
            }
            held = rate;
        }
        json.put("highestRateHeld", held);
        json.put("stoppedBecause", stopped);
        Path svg = svgBeside(file);
        writeJson(file, json);
        Files.writeString(svg, SweepChart.svg("csi bench --sweep " + Instant.now() + " (SLO claim P99 "
                + slo.toMillis() + " ms; highest rate held " + fmt(held) + " ops/s)", points));
        out.println();
        out.println("sweep: highest offered rate held (claim P99 <= " + slo.toMillis() + " ms, no error): "
                + fmt(held) + " ops/s; stopped: " + stopped);
        out.println("JSON: " + file.toAbsolutePath());
        out.println("chart: " + svg.toAbsolutePath());
        return 0;
    }

    static Path svgBeside(Path json) {
        String name = json.getFileName().toString();
        String base = name.endsWith(".json") ? name.substring(0, name.length() - 5) : name;
        return json.resolveSibling(base + ".svg");
    }

    private static List<Double> parseRates(String list) {
        List<Double> rates = new ArrayList<>();
        for (String r : list.split(",")) {
            rates.add(Bench.parseRate(r.trim()));
        }
        return rates;
    }

    static SweepChart.Point point(JsonNode result) {
        Map<String, Double> latency = new LinkedHashMap<>();
        for (String p : List.of("p50Ms", "p90Ms", "p99Ms", "p999Ms")) {
            latency.put("claim " + p.replace("Ms", "").toUpperCase(Locale.ROOT).replace("P999", "P99.9"),
                    result.path("claim").path(p).asDouble());
        }
        Map<String, Double> cpu = new LinkedHashMap<>();
        for (JsonNode proc : result.path("processes")) {
            if (proc.has("cpuMsPerOp")) {
                cpu.put(proc.path("name").asText(), proc.path("cpuMsPerOp").asDouble());
            }
        }
        return new SweepChart.Point(result.path("offeredRate").asDouble(), latency, cpu);
    }

    private ObjectNode header(String mode) {
        ObjectNode json = Http.MAPPER.createObjectNode();
        json.put("mode", mode);
        json.put("date", Instant.now().toString());
        json.put("host", hostName());
        json.put("cores", Runtime.getRuntime().availableProcessors());
        json.put("kafka", endpoints.kafkaBootstrap());
        json.put("claimsUrl", endpoints.claimsUrl());
        json.put("volumes", volumes);
        return json;
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "?";
        }
    }

    private static void writeJson(Path file, JsonNode json) throws IOException {
        if (file.toAbsolutePath().getParent() != null) {
            Files.createDirectories(file.toAbsolutePath().getParent());
        }
        Files.writeString(file, Http.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(json));
    }

    // ------------------------------------------------------------------ setup: nodes, volumes, floor probes

    /** What every run of this invocation shares: the nodes, the volumes, the floor's probes. */
    record Setup(List<String> nodes, List<String> volumeIds, Map<String, String> workerUrls, double kafkaHopMs,
                 double commitMs, String commitNote) {
    }

    private Setup setUp() throws Exception {
        List<String> nodes = nodes();
        Map<String, String> workerUrls = workerUrls();
        out.println("csi bench: " + volumes + " volumes over " + nodes.size() + " node(s) " + nodes + "; kafka "
                + endpoints.kafkaBootstrap() + "; claim-service " + endpoints.claimsUrl());
        List<String> ids = prepareVolumes(nodes);
        releaseLeftovers(ids);
        double hop = kafkaHopP50Ms();
        double commit = -1;
        String note;
        try {
            commit = commitP50Ms();
            note = "tiny transaction (UPDATE of one row + COMMIT) on csi_bench_probe in the local PostgreSQL";
        } catch (Exception e) {
            note = "not measured: " + e.getMessage();
            out.println("floor: PostgreSQL commit " + note + " (the floor counts commits as 0 ms)");
        }
        out.println(String.format(Locale.ROOT, "floor probes: Kafka produce → consume round trip P50 %.2f ms;"
                + " PostgreSQL commit P50 %s", hop, commit < 0 ? "n/a" : String.format(Locale.ROOT, "%.2f ms", commit)));
        return new Setup(nodes, ids, workerUrls, hop, commit, note);
    }

    /** The nodes with a healthy node instance of the plugin, from plugin-registry-service. */
    private List<String> nodes() {
        Http registry = new Http("plugin-registry-service", endpoints.registryUrl(), endpoints.token());
        Http.Response r = registry.get("/v1/plugins/" + pluginId);
        if (!r.ok() || r.body() == null) {
            throw new Operator.Failure("plugin-registry-service does not know plugin " + pluginId + " (HTTP "
                    + r.status() + "); is the system up?");
        }
        TreeSet<String> nodes = new TreeSet<>();
        for (JsonNode instance : r.body().path("instances")) {
            if (instance.path("node").asBoolean() && instance.path("healthy").asBoolean()) {
                nodes.add(instance.path("nodeId").asText());
            }
        }
        if (nodes.isEmpty()) {
            throw new Operator.Failure("no healthy node instance of plugin " + pluginId + " in plugin-registry-service");
        }
        return List.copyOf(nodes);
    }

    private Properties upProperties() {
        Properties props = new Properties();
        Path file = work.resolve(Endpoints.FILE);
        if (Files.isRegularFile(file)) {
            try (Reader reader = Files.newBufferedReader(file)) {
                props.load(reader);
            } catch (IOException e) {
                // none: no worker metrics, no plugin sockets
            }
        }
        return props;
    }

    /** Every {@code <node>.worker.url} of the endpoints file. */
    private Map<String, String> workerUrls() {
        Map<String, String> urls = new TreeMap<>();
        Properties props = upProperties();
        for (String key : props.stringPropertyNames()) {
            if (key.endsWith(".worker.url")) {
                urls.put(key.substring(0, key.length() - ".worker.url".length()), props.getProperty(key));
            }
        }
        return urls;
    }

    private List<String> prepareVolumes(List<String> nodes) throws Exception {
        Http claims = new Http("claim-service", endpoints.claimsUrl(), endpoints.token());
        List<String> ids = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < volumes; i++) {
            String id = String.format(Locale.ROOT, "bench-%03d", i);
            ids.add(id);
            Http.Response r = claims.get("/v1/volumes/" + namespace + "/" + id);
            if (r.status() == 404) {
                missing.add(id);
            } else if (!r.ok()) {
                throw new Operator.Failure("claim-service: GET volume " + id + ": HTTP " + r.status() + " " + r.raw());
            }
        }
        if (!missing.isEmpty()) {
            List<Path> sockets = new ArrayList<>();
            Properties props = upProperties();
            for (String node : nodes) {
                String dir = props.getProperty(node + ".plugins-dir");
                if (dir != null && Files.exists(Path.of(dir, pluginId, "csi.sock"))) {
                    sockets.add(Path.of(dir, pluginId, "csi.sock"));
                }
            }
            out.println("creating and registering " + missing.size() + " volume(s) ("
                    + (sockets.isEmpty() ? "no plugin socket in " + work.resolve(Endpoints.FILE)
                    + ": externalId = the volume id" : "CreateVolume on " + sockets.size() + " plugin socket(s)") + ")");
            Map<String, String> external = sockets.isEmpty() ? Map.of() : PluginVolumes.createAll(missing, sockets);
            for (String id : missing) {
                Map<String, Object> body = Map.of("id", id, "namespace", namespace, "name", id,
                        "externalId", external.getOrDefault(id, id), "pluginId", pluginId,
                        "accessMode", AccessMode.MULTI_NODE_SINGLE_WRITER.wire(),
                        "attachmentMode", AttachmentMode.FILE_SYSTEM.wire());
                Http.Response r = claims.post("/v1/volumes", Http.MAPPER.writeValueAsString(body));
                if (r.status() != 201 && r.status() != 409) {
                    throw new Operator.Failure("claim-service refused volume " + id + " (HTTP " + r.status() + "): "
                            + r.raw());
                }
            }
        }
        for (String id : ids) {
            Wait.until("volume " + id + " schedulable", Duration.ofSeconds(60), null, () -> {
                Http.Response s = claims.get("/v1/volumes/" + namespace + "/" + id);
                return s.ok() && s.body() != null && s.body().path("schedulable").asBoolean()
                        ? Optional.of(true) : Optional.empty();
            });
        }
        return ids;
    }

    /**
     * Releases every claim an earlier run left on the bench's volumes (a run stopped early, an answer after its
     * drain), so this run's claims are not rejected for them; waits (bounded) until claim-service shows none.
     */
    private void releaseLeftovers(List<String> ids) throws Exception {
        Http claims = new Http("claim-service", endpoints.claimsUrl(), endpoints.token());
        Map<String, List<String>> held = new LinkedHashMap<>();
        for (String id : ids) {
            Http.Response r = claims.get("/v1/volumes/" + namespace + "/" + id);
            for (JsonNode c : r.body() == null ? Http.MAPPER.createArrayNode() : r.body().path("claims")) {
                held.computeIfAbsent(id, k -> new ArrayList<>()).add(c.path("allocationId").asText());
            }
        }
        if (held.isEmpty()) {
            return;
        }
        int count = held.values().stream().mapToInt(List::size).sum();
        out.println("releasing " + count + " claim(s) left by an earlier run on " + held.size() + " volume(s)");
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(
                ClaimClient.producerProps(endpoints.kafkaBootstrap(), "csi-bench-cleanup"), new StringSerializer(),
                new ByteArraySerializer())) {
            for (Map.Entry<String, List<String>> e : held.entrySet()) {
                for (String alloc : e.getValue()) {
                    producer.send(ClaimClient.record(topics, ClaimClient.release(namespace, e.getKey(), alloc),
                            ClaimClient.newTraceparent()));
                }
            }
            producer.flush();
        }
        for (String id : held.keySet()) {
            Wait.until("the claims left on " + id + " released", Duration.ofSeconds(120), null, () -> {
                Http.Response r = claims.get("/v1/volumes/" + namespace + "/" + id);
                return r.ok() && r.body() != null && r.body().path("claims").isEmpty()
                        ? Optional.of(true) : Optional.empty();
            });
        }
    }

    /** P50 of a produce (acks=all) → consume round trip on the probe topic {@code <prefix>bench-probe}. */
    private double kafkaHopP50Ms() throws Exception {
        String topic = endpoints.topicPrefix() + io.csiorchestrator.events.KafkaAccess.BENCH_PROBE_TOPIC;
        Kraft.createTopic(endpoints.kafkaBootstrap(), CliKafkaSecurity.bench(), topic, 1, Map.of());
        Histogram histogram = new Histogram(HIGHEST_MICROS, 3);
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(
                CliKafkaSecurity.bench().applyTo(ClaimClient.producerProps(endpoints.kafkaBootstrap(), "csi-bench-probe")),
                new StringSerializer(),
                new ByteArraySerializer());
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                     CliKafkaSecurity.bench().applyTo(ClaimClient.consumerProps(endpoints.kafkaBootstrap(), "csi-bench-probe")))) {
            consumer.assign(List.of(partition));
            consumer.seekToEnd(List.of(partition));
            consumer.position(partition, Duration.ofSeconds(15));
            for (int i = 0; i < PROBE_WARMUP + PROBES; i++) {
                String id = UUID.randomUUID().toString();
                long start = System.nanoTime();
                producer.send(new ProducerRecord<>(topic, id, id.getBytes(StandardCharsets.UTF_8)));
                boolean seen = false;
                long deadline = start + TimeUnit.SECONDS.toNanos(30);
                while (!seen && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        seen |= id.equals(r.key());
                    }
                }
                if (!seen) {
                    throw new Operator.Failure("the Kafka probe record did not come back within 30 s on " + topic);
                }
                if (i >= PROBE_WARMUP) {
                    histogram.recordValue(Math.min(HIGHEST_MICROS, (System.nanoTime() - start) / 1000));
                }
            }
        }
        return histogram.getValueAtPercentile(50) / 1000.0;
    }

    /**
     * P50 of a tiny transaction on the local PostgreSQL of {@code up} ({@code <work>/postgres/ready.properties}
     * names its port and user; the password is the one {@code up} gives the services).
     */
    private double commitP50Ms() throws Exception {
        Path ready = work.resolve(Cluster.POSTGRES).resolve(StateDir.READY);
        if (!Files.isRegularFile(ready)) {
            throw new IllegalStateException("no " + ready + " (PostgreSQL not started by ./csi up in this work dir)");
        }
        Properties props = new Properties();
        try (Reader reader = Files.newBufferedReader(ready)) {
            props.load(reader);
        }
        String url = "jdbc:postgresql://127.0.0.1:" + props.getProperty("port") + "/postgres";
        Histogram histogram = new Histogram(HIGHEST_MICROS, 3);
        try (Connection c = DriverManager.getConnection(url, props.getProperty("username", PostgresMain.USER),
                "postgres")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE IF NOT EXISTS csi_bench_probe (id int PRIMARY KEY, n bigint NOT NULL)");
                s.execute("INSERT INTO csi_bench_probe VALUES (1, 0) ON CONFLICT (id) DO NOTHING");
            }
            c.setAutoCommit(false);
            try (PreparedStatement update = c.prepareStatement("UPDATE csi_bench_probe SET n = n + 1 WHERE id = 1")) {
                for (int i = 0; i < PROBE_WARMUP + PROBES; i++) {
                    long start = System.nanoTime();
                    update.executeUpdate();
                    c.commit();
                    if (i >= PROBE_WARMUP) {
                        histogram.recordValue(Math.min(HIGHEST_MICROS, (System.nanoTime() - start) / 1000));
                    }
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("PostgreSQL at " + url + ": " + e.getMessage(), e);
        }
        return histogram.getValueAtPercentile(50) / 1000.0;
    }

    // ------------------------------------------------------------------ one open-loop run

    /** A request sent and not yet answered. */
    private record Pending(LoadSchedule.Op op, long dueNanoTime,
                           java.util.concurrent.CompletableFuture<String> answer) {
    }

    private ObjectNode runOnce(Setup setup, double rate, Duration duration, Duration hold) throws Exception {
        List<LoadSchedule.Op> plan = LoadSchedule.plan(rate, volumes, hold.toNanos(), duration.toNanos());
        int used = LoadSchedule.volumesUsed(rate, volumes, hold.toNanos(), duration.toNanos());
        if (used < volumes) {
            out.println("using " + used + " of the " + volumes + " volumes: each is claimed, then released "
                    + fmt(used / rate) + " s later, within the " + duration.toSeconds() + " s");
        }
        String run = UUID.randomUUID().toString().substring(0, 8);
        Map<String, Pending> pending = new ConcurrentHashMap<>();
                Histogram claimLatency = new SynchronizedHistogram(HIGHEST_MICROS, 3);
        Histogram releaseLatency = new SynchronizedHistogram(HIGHEST_MICROS, 3);
        Map<String, AtomicLong> outcomes = new ConcurrentHashMap<>();
        AtomicLong lastAnswer = new AtomicLong();
        AtomicLong sent = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        Map<String, String> lastState = new ConcurrentHashMap<>(); // of an unanswered request: its last status

        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(
                ClaimClient.producerProps(endpoints.kafkaBootstrap(), "csi-bench-" + run), new StringSerializer(),
                new ByteArraySerializer());
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                     ClaimClient.consumerProps(endpoints.kafkaBootstrap(), "csi-bench-" + run))) {
            List<TopicPartition> partitions = new ArrayList<>();
            String statusTopic = topics.name(Topic.CLAIM_STATUS);
            List<PartitionInfo> infos = consumer.partitionsFor(statusTopic, Duration.ofSeconds(15));
            if (infos == null || infos.isEmpty()) {
                throw new Operator.Failure("topic " + statusTopic + " does not exist on " + endpoints.kafkaBootstrap());
            }
            infos.forEach(i -> partitions.add(new TopicPartition(i.topic(), i.partition())));
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            partitions.forEach(p -> consumer.position(p, Duration.ofSeconds(15)));
            producer.partitionsFor(topics.name(Topic.CLAIM_REQUESTED)); // metadata before the first due send

            Thread reader = new Thread(() -> {
                while (!stop.get()) {
                    try {
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                            long now = System.nanoTime();
                            ClaimStatus s;
                            try {
                                s = EventCodec.decode(ClaimStatus.class, r.value());
                            } catch (MalformedEventException e) {
                                continue;
                            }
                            Pending p = s.requestId() == null ? null : pending.get(s.requestId());
                            if (p == null) {
                                continue;
                            }
                            if (!terminal(p.op().kind(), s.state())) {
                                lastState.put(s.requestId(), s.state().wire());
                                continue;
                            }
                            if (pending.remove(s.requestId()) == null) {
                                continue;
                            }
                            long micros = Math.max(0, (now - p.dueNanoTime()) / 1000);
                            boolean ok = p.op().kind() == LoadSchedule.Kind.CLAIM ? s.state() == ClaimState.READY
                                    : s.state() == ClaimState.RELEASED;
                            if (ok) {
                                (p.op().kind() == LoadSchedule.Kind.CLAIM ? claimLatency : releaseLatency)
                                        .recordValue(Math.min(HIGHEST_MICROS, micros));
                            }
                            String o = outcome(p.op().kind(), s, setup.nodes());
                            outcomes.computeIfAbsent(o, k -> new AtomicLong()).incrementAndGet();
                            p.answer().complete(o);
                            lastAnswer.set(now);
                        }
                    } catch (org.apache.kafka.common.errors.WakeupException e) {
                        return;
                    }
                }
            }, "csi-bench-answers");
            reader.setDaemon(true);
            reader.start();

            Map<String, ProcStats.Sample> cpuBefore = sampleProcesses();
            Map<String, RpcMetrics.Total> rpcBefore = rpcTotals(setup.workerUrls());
            long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
            long worstLate;
            try {
                worstLate = OpenLoop.run(plan, start, OpenLoop.SYSTEM, (op, due) -> {
                    String volume = setup.volumeIds().get(op.volume());
                    String alloc = "bench-" + run + "-" + op.volume() + "-" + op.cycle();
                    ClaimRequested request = op.kind() == LoadSchedule.Kind.CLAIM
                            ? ClaimClient.claim(namespace, volume, alloc,
                            setup.nodes().get(op.volume() % setup.nodes().size()), ClaimMode.WRITE,
                            AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM)
                            : ClaimClient.release(namespace, volume, alloc);
                    Pending mine = new Pending(op, due, new java.util.concurrent.CompletableFuture<>());
                    pending.put(request.requestId(), mine);
                    sent.incrementAndGet();
                    try {
                        producer.send(ClaimClient.record(topics, request, ClaimClient.newTraceparent()), (meta, error) -> {
                            if (error != null && pending.remove(request.requestId()) != null) {
                                String o = kindName(op.kind()) + " not sent: " + error.getClass().getSimpleName();
                                outcomes.computeIfAbsent(o, k -> new AtomicLong()).incrementAndGet();
                                mine.answer().complete(o);
                            }
                        });
                    } catch (RuntimeException e) {
                        if (pending.remove(request.requestId()) != null) {
                            String o = kindName(op.kind()) + " not sent: " + e.getClass().getSimpleName();
                            outcomes.computeIfAbsent(o, k -> new AtomicLong()).incrementAndGet();
                            mine.answer().complete(o);
                        }
                    }
                    return mine.answer();
                });
                long sendEnd = System.nanoTime();
                out.println(String.format(Locale.ROOT, "sent %d operations in %.1f s; waiting up to %d s for the"
                        + " answers", plan.size(), (sendEnd - start) / 1e9, drain.toSeconds()));
                long deadline = System.nanoTime() + drain.toNanos();
                while (!pending.isEmpty() && System.nanoTime() < deadline) {
                    LockSupportSleep.millis(50);
                }
            } finally {
                stop.set(true);
                consumer.wakeup();
                reader.join(TimeUnit.SECONDS.toMillis(10));
            }
            Map<String, ProcStats.Sample> cpuAfter = sampleProcesses();
            Map<String, RpcMetrics.Total> rpcAfter = rpcTotals(setup.workerUrls());
            for (Map.Entry<String, Pending> p : pending.entrySet()) {
                outcomes.computeIfAbsent(kindName(p.getValue().op().kind()) + " unanswered within the drain ("
                        + drain.toSeconds() + " s; last status: " + lastState.getOrDefault(p.getKey(), "none") + ")",
                        k -> new AtomicLong()).incrementAndGet();
            }
            long answered = claimLatency.getTotalCount() + releaseLatency.getTotalCount();
            double offered = plan.size() / ((plan.get(plan.size() - 1).dueNanos() + 1e9 / rate) / 1e9);
            double achieved = lastAnswer.get() > start ? answered / ((lastAnswer.get() - start) / 1e9) : 0;

            ObjectNode result = Http.MAPPER.createObjectNode();
            result.put("rate", rate);
            result.put("durationS", duration.toMillis() / 1000.0);
            result.put("holdMs", hold.toMillis());
            result.put("volumesUsed", used);
            result.putPOJO("nodes", setup.nodes());
            result.put("operationsPlanned", plan.size());
            result.put("operationsSent", sent.get());
            result.put("operationsSucceeded", answered);
            result.put("offeredRate", offered);
            result.put("achievedRate", achieved);
            result.put("worstSendLatenessMs", worstLate / 1e6);
            result.set("claim", percentiles(claimLatency));
            result.set("release", percentiles(releaseLatency));
            ObjectNode outcomeNode = result.putObject("outcomes");
            ObjectNode nonReady = result.putObject("nonReady");
            long nonReadyTotal = 0;
            for (Map.Entry<String, AtomicLong> e : new TreeMap<>(outcomes).entrySet()) {
                outcomeNode.put(e.getKey(), e.getValue().get());
                if (!succeeded(e.getKey())) {
                    nonReady.put(e.getKey(), e.getValue().get());
                    nonReadyTotal += e.getValue().get();
                }
            }
            result.put("nonReadyTotal", nonReadyTotal);
            result.set("processes", processes(cpuBefore, cpuAfter, answered));
            result.set("floor", floor(setup, rpcBefore, rpcAfter, claimLatency, releaseLatency));
            print(result);
            return result;
        }
    }

    private static boolean terminal(LoadSchedule.Kind kind, ClaimState state) {
        return switch (state) {
            case READY -> kind == LoadSchedule.Kind.CLAIM;
            case RELEASED, REJECTED, FAILED -> true; // a claim released before it was ready: answered, not ready
            default -> false;
        };
    }

    /**
     * The outcome an answer is counted under: the operation, the state, and the reason with the ids of this run
     * (volume, allocation, node) replaced by placeholders, so one cause is one line however many volumes it hit.
     */
    static String outcome(LoadSchedule.Kind kind, ClaimStatus s, List<String> nodes) {
        String reason = s.reason() == null || s.reason().isBlank() ? "" : " (" + genericReason(s.reason(), nodes) + ")";
        return kindName(kind) + " " + s.state().wire() + reason;
    }

    static String genericReason(String reason, List<String> nodes) {
        String r = reason.replaceAll("bench-[0-9a-f]{8}-\\d+-\\d+", "<alloc>").replaceAll("bench-\\d{3,}", "<volume>");
        for (String node : nodes) {
            r = r.replaceAll("(?<![\\w-])" + java.util.regex.Pattern.quote(node) + "(?![\\w-])", "<node>");
        }
        return r;
    }

    /** Whether an outcome is the one asked for: claim ready, release released (whatever the reason note). */
    static boolean succeeded(String outcome) {
        return outcome.equals("claim ready") || outcome.startsWith("release released");
    }

    private static String kindName(LoadSchedule.Kind kind) {
        return kind == LoadSchedule.Kind.CLAIM ? "claim" : "release";
    }

    static ObjectNode percentiles(Histogram h) {
        ObjectNode node = Http.MAPPER.createObjectNode();
        node.put("count", h.getTotalCount());
        if (h.getTotalCount() == 0) {
            return node;
        }
        node.put("p50Ms", h.getValueAtPercentile(50) / 1000.0);
        node.put("p90Ms", h.getValueAtPercentile(90) / 1000.0);
        node.put("p99Ms", h.getValueAtPercentile(99) / 1000.0);
        node.put("p999Ms", h.getValueAtPercentile(99.9) / 1000.0);
        node.put("maxMs", h.getMaxValue() / 1000.0);
        return node;
    }

    // ------------------------------------------------------------------ processes and RPC metrics

    /**
     * CPU and RSS of every process in {@code <work>/pids} (the {@code postgres} entry split into its JVM,
     * PostgresMain, and the PostgreSQL server, the postmaster with its backends); empty when the bench is not
     * on the system's machine.
     */
    private Map<String, ProcStats.Sample> sampleProcesses() throws IOException {
        Map<String, ProcStats.Sample> samples = new LinkedHashMap<>();
        for (Cluster.Proc proc : Cluster.readPids(work)) {
            long pid = proc.handle().pid();
            if (proc.name().equals(Cluster.POSTGRES)) {
                Optional<Long> postmaster = PostgresMain.postmasterPid(work.resolve(Cluster.POSTGRES).resolve("data"));
                if (postmaster.isPresent()) {
                    ProcStats.sampleOwn(pid).ifPresent(s -> samples.put("postgres (PostgresMain JVM)", s));
                    ProcStats.sampleTree(postmaster.get()).ifPresent(s -> samples.put("postgresql server", s));
                    continue;
                }
            }
            ProcStats.sampleTree(pid).ifPresent(s -> samples.put(proc.name(), s));
        }
        sampleFenceGuards(samples);
        return samples;
    }

    /**
     * The workers' fence guards (bash watchdogs started with setsid, so not in a worker's process tree): each one
     * named by {@code <work>/<node>/root/fence-guard.pid} and still running the guard script.
     */
    private void sampleFenceGuards(Map<String, ProcStats.Sample> samples) throws IOException {
        if (!Files.isDirectory(work)) {
            return;
        }
        try (var nodes = Files.list(work)) {
            for (Path node : nodes.sorted().toList()) {
                Path pidFile = node.resolve("root").resolve("fence-guard.pid");
                if (!Files.isRegularFile(pidFile)) {
                    continue;
                }
                long pid;
                try {
                    pid = Long.parseLong(Files.readString(pidFile).trim());
                } catch (NumberFormatException | IOException e) {
                    continue;
                }
                boolean guard = ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
                        .flatMap(h -> h.info().arguments())
                        .map(args -> java.util.Arrays.stream(args).anyMatch(a -> a.endsWith("csi-fence-guard")))
                        .orElse(false);
                if (guard) {
                    ProcStats.sampleTree(pid).ifPresent(s -> samples.put("fence-guard-" + node.getFileName(), s));
                }
            }
        }
    }

    private JsonNode processes(Map<String, ProcStats.Sample> before, Map<String, ProcStats.Sample> after,
                               long operations) {
        ArrayNode list = Http.MAPPER.createArrayNode();
        if (before.isEmpty()) {
            ObjectNode node = list.addObject();
            node.put("name", "all");
            node.put("note", "not local: no live process in " + work.resolve(Cluster.PIDS)
                    + " (run the bench on the machine of ./csi up, with its --work-dir)");
            return list;
        }
        long total = 0;
        for (Map.Entry<String, ProcStats.Sample> e : before.entrySet()) {
            ProcStats.Sample end = after.get(e.getKey());
            ObjectNode node = list.addObject();
            node.put("name", e.getKey());
            if (end == null) {
                node.put("note", "exited during the run");
                continue;
            }
            long ticks = end.ticks() - e.getValue().ticks();
            total += ticks;
            node.put("cpuMs", ticks * 1000 / ProcStats.TICKS_PER_SECOND);
            node.put("cpuMsPerOp", ProcStats.cpuMsPerOperation(ticks, operations));
            node.put("rssMb", end.rssKb() / 1024.0);
            node.put("processes", end.processes());
        }
        ObjectNode sum = list.addObject();
        sum.put("name", "total");
        sum.put("cpuMs", total * 1000 / ProcStats.TICKS_PER_SECOND);
        sum.put("cpuMsPerOp", ProcStats.cpuMsPerOperation(total, operations));
        return list;
    }

    private Map<String, RpcMetrics.Total> rpcTotals(Map<String, String> workerUrls) {
        Map<String, RpcMetrics.Total> totals = new java.util.HashMap<>();
        for (Map.Entry<String, String> worker : workerUrls.entrySet()) {
            try {
                // sendAsync + get(timeout): a hard deadline on the whole exchange (HttpRequest.timeout covers only
                // the wait for the response headers; a body that never ends stalled a sweep for 10 minutes).
                java.net.http.HttpResponse<String> r = METRICS.sendAsync(java.net.http.HttpRequest.newBuilder(
                                java.net.URI.create(worker.getValue() + "/q/metrics")).timeout(Duration.ofSeconds(30))
                        .header("Accept", "text/plain; version=0.0.4").GET().build(),
                        java.net.http.HttpResponse.BodyHandlers.ofString()).get(30, TimeUnit.SECONDS);
                if (r.statusCode() == 200) {
                    totals = RpcMetrics.plus(totals, RpcMetrics.parse(r.body()));
                } else {
                    out.println("note: " + worker.getValue() + "/q/metrics answered HTTP " + r.statusCode());
                }
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                out.println("note: no metrics from node-mount-worker " + worker.getKey() + " at " + worker.getValue()
                        + " (its RPC times are missing from the floor): " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return totals;
            }
        }
        return totals;
    }

    private ObjectNode floor(Setup setup, Map<String, RpcMetrics.Total> rpcBefore,
                             Map<String, RpcMetrics.Total> rpcAfter, Histogram claims, Histogram releases) {
        Map<String, Double> means = RpcMetrics.meanMsPerCall(rpcBefore, rpcAfter);
        // The systems the bench runs on (./csi up) have a controller instance on every node: the controller calls run
        // inside the node's mount and unmount command (issue 36 item 1), no round of their own.
        boolean controller = false;
        double commit = Math.max(0, setup.commitMs());
        Floor.Estimate claim = Floor.of(Floor.CLAIM_RPCS, means, setup.kafkaHopMs(), commit, controller);
        Floor.Estimate release = Floor.of(Floor.RELEASE_RPCS, means, setup.kafkaHopMs(), commit, controller);
        ObjectNode node = Http.MAPPER.createObjectNode();
        node.put("kafkaHopP50Ms", setup.kafkaHopMs());
        if (setup.commitMs() >= 0) {
            node.put("commitP50Ms", setup.commitMs());
        }
        node.put("commitNote", setup.commitNote());
        node.set("rpcMeanMs", Http.MAPPER.valueToTree(means));
        if (setup.workerUrls().isEmpty()) {
            node.put("rpcNote", "no <node>.worker.url in " + work.resolve(Endpoints.FILE) + ": plugin time 0");
        }
        for (Map.Entry<String, Floor.Estimate> e : Map.of("claim", claim, "release", release).entrySet()) {
            ObjectNode f = node.putObject(e.getKey());
            f.put("hops", e.getValue().hops());
            f.put("commits", e.getValue().commits());
            f.put("pluginMs", e.getValue().pluginMs());
            f.put("totalMs", e.getValue().totalMs());
            f.put("formula", e.getValue().formula());
            Histogram h = e.getKey().equals("claim") ? claims : releases;
            if (h.getTotalCount() > 0) {
                f.put("p50OverFloor", Floor.ratio(h.getValueAtPercentile(50) / 1000.0, e.getValue()));
            }
        }
        return node;
    }

    // ------------------------------------------------------------------ report

    private void print(JsonNode r) {
        out.println(String.format(Locale.ROOT, "offered %.1f ops/s, achieved %.1f ops/s (succeeded %d of %d sent;"
                        + " worst send lateness %.1f ms)", r.path("offeredRate").asDouble(),
                r.path("achievedRate").asDouble(), r.path("operationsSucceeded").asLong(),
                r.path("operationsSent").asLong(), r.path("worstSendLatenessMs").asDouble()));
        Table latency = new Table("LATENCY (ms from due time)", "N", "P50", "P90", "P99", "P99.9", "MAX");
        for (String kind : List.of("claim", "release")) {
            JsonNode h = r.path(kind);
            latency.row(kind.equals("claim") ? "claim → ready" : "release → released", h.path("count").asLong(),
                    ms(h, "p50Ms"), ms(h, "p90Ms"), ms(h, "p99Ms"), ms(h, "p999Ms"), ms(h, "maxMs"));
        }
        out.print(latency.render());
        Table outcomes = new Table("OUTCOME", "COUNT");
        r.path("outcomes").fields().forEachRemaining(e -> outcomes.row(e.getKey(), e.getValue().asLong()));
        out.print(outcomes.render());
        out.println(r.path("nonReadyTotal").asLong() == 0 ? "non-ready outcomes: none"
                : "non-ready outcomes: " + r.path("nonReadyTotal").asLong());
        Table procs = new Table("PROCESS", "CPU MS/OP", "CPU MS", "RSS MB");
        for (JsonNode p : r.path("processes")) {
            if (p.has("note")) {
                procs.row(p.path("name").asText(), p.path("note").asText(), "", "");
            } else {
                procs.row(p.path("name").asText(), fmt(p.path("cpuMsPerOp").asDouble()), p.path("cpuMs").asLong(),
                        p.has("rssMb") ? fmt(p.path("rssMb").asDouble()) : "");
            }
        }
        out.print(procs.render());
        JsonNode floor = r.path("floor");
        out.println("floor (" + Floor.HOPS_NODE_ONLY + " hops/" + Floor.COMMITS_NODE_ONLY
                + " commits: the controller calls inside the node's command; " + Floor.HOPS_WITH_CONTROLLER + "/"
                + Floor.COMMITS_WITH_CONTROLLER + " with a controller on another node"
                + "; plugin RPC mean ms " + rpcSummary(floor.path("rpcMeanMs")) + "):");
        for (String kind : List.of("claim", "release")) {
            JsonNode f = floor.path(kind);
            out.println("  " + kind + ": " + f.path("formula").asText() + (f.has("p50OverFloor")
                    ? String.format(Locale.ROOT, "; P50 / floor = %.1f", f.path("p50OverFloor").asDouble()) : ""));
        }
    }

    private static String rpcSummary(JsonNode means) {
        List<String> parts = new ArrayList<>();
        means.fields().forEachRemaining(e -> parts.add(e.getKey() + " " + fmt(e.getValue().asDouble())));
        return parts.isEmpty() ? "none seen" : String.join(", ", parts);
    }

    private static String ms(JsonNode h, String field) {
        return h.has(field) ? fmt(h.path(field).asDouble()) : "-";
    }

    static String fmt(double v) {
        return v >= 100 || v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v)
                : String.format(Locale.ROOT, "%.2f", v);
    }

    /** A bounded pause of the draining loop (no busy wait). */
    private static final class LockSupportSleep {
        static void millis(long ms) {
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(ms));
        }
    }
}
