package io.csiorchestrator.cli;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * {@code csi bench}: the latency of a claim and of its release, hop by hop, on the system
 * {@code csi up} left running. One volume, claimed for write on one node and released, over and
 * over; one producer and one consumer live for the whole run, so client start-up is not measured.
 *
 * <p>Each hop is read from the Kafka record timestamps (CreateTime, stamped by the producing
 * client; every process runs on this machine's clock): claim-requested, the node-commands record
 * claim-service's outbox relay sent, the worker's mount-done, and claim-service's claim-status.
 * The report gives, per hop, the time since the request (median, 90th percentile, max).
 */
final class Bench {

    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);

    private final Args args;
    private final Endpoints endpoints;
    private final PrintStream out;
    private final TopicCatalog topics;
    /** Records seen per volume during the running cycle (cycles run one at a time, one volume). */
    private final Map<String, List<Hop>> hops = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<ClaimStatus>> waiting = new ConcurrentHashMap<>();
    private final AtomicBoolean stop = new AtomicBoolean();

    /** One record seen for the volume: what it was and its timestamp (ms). */
    record Hop(String label, long timestamp) {
    }

    Bench(Args args, Endpoints endpoints, PrintStream out) {
        this.args = args;
        this.endpoints = endpoints;
        this.out = out;
        this.topics = new TopicCatalog(endpoints.topicPrefix());
    }

    /** Options of {@code csi bench} (both modes). */
    static final java.util.Set<String> OPTIONS = java.util.Set.of("work-dir", "cycles", "warmup", "node", "rate",
            "duration", "volumes", "hold", "json", "sweep", "slo", "step-duration", "rates", "drain", "plugin",
            "sequential");

    int run() throws Exception {
        boolean sweep = args.flag("sweep");
        boolean rate = args.option("rate").isPresent();
        if (sweep || rate) {
            if (args.flag("sequential")) {
                throw new Args.UsageException("--sequential runs one claim at a time: no --rate or --sweep with it");
            }
            if (sweep && rate) {
                throw new Args.UsageException("--sweep steps the rate itself: no --rate with it");
            }
            LoadBench load = new LoadBench(args, endpoints, Up.workDir(args, Main.home(args)), out);
            return sweep ? load.sweep() : load.run();
        }
        return sequential();
    }

    /** The hop-by-hop mode ({@code --sequential}, or no {@code --rate}/{@code --sweep}): one claim at a time. */
    private int sequential() throws Exception {
        if (jsonFile(args).isPresent()) {
            throw new Args.UsageException("--json goes with --rate or --sweep");
        }
        int cycles = intOption("cycles", 30);
        int warmup = intOption("warmup", 5);
        String node = args.option("node").orElse(Cluster.NODES.get(0));
        String namespace = args.option("namespace").orElse("default");
        String volume = "bench-" + UUID.randomUUID().toString().substring(0, 8);

        out.println("csi bench: " + warmup + " warm-up + " + cycles + " measured cycles (claim for write on " + node
                + ", release) of volume " + namespace + "/" + volume + "; kafka " + endpoints.kafkaBootstrap());
        prepareVolume(namespace, volume);

        Thread reader;
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(
                CliKafkaSecurity.bench().applyTo(ClaimClient.producerProps(endpoints.kafkaBootstrap(), "csi-bench")),
                new StringSerializer(),
                new ByteArraySerializer());
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                     CliKafkaSecurity.bench().applyTo(ClaimClient.consumerProps(endpoints.kafkaBootstrap(), "csi-bench")))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (Topic topic : List.of(Topic.CLAIM_STATUS, Topic.NODE_COMMANDS, Topic.MOUNT_DONE)) {
                List<PartitionInfo> infos = consumer.partitionsFor(topics.name(topic), Duration.ofSeconds(15));
                if (infos == null || infos.isEmpty()) {
                    throw new Operator.Failure("topic " + topics.name(topic) + " does not exist on "
                            + endpoints.kafkaBootstrap() + " (is the system up? ./csi up)");
                }
                infos.forEach(i -> partitions.add(new TopicPartition(i.topic(), i.partition())));
            }
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            partitions.forEach(p -> consumer.position(p, Duration.ofSeconds(15)));
            reader = new Thread(() -> read(consumer), "csi-bench-reader");
            reader.start();
            try {
                List<Map<String, Long>> claims = new ArrayList<>();
                List<Map<String, Long>> releases = new ArrayList<>();
                List<Long> claimRoundTrips = new ArrayList<>();
                List<Long> releaseRoundTrips = new ArrayList<>();
                for (int i = 0; i < warmup + cycles; i++) {
                    String alloc = "bench-" + i + "-" + UUID.randomUUID().toString().substring(0, 6);
                    boolean measured = i >= warmup;
                    Cycle claim = cycle(producer, ClaimClient.claim(namespace, volume, alloc, node, ClaimMode.WRITE,
                            AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM), ClaimState.READY);
                    Cycle release = cycle(producer, ClaimClient.release(namespace, volume, alloc), ClaimState.RELEASED);
                    if (measured) {
                        claims.add(claim.offsets());
                        releases.add(release.offsets());
                        claimRoundTrips.add(claim.roundTripMicros());
                        releaseRoundTrips.add(release.roundTripMicros());
                    }
                    out.print(measured ? "." : "w");
                    out.flush();
                }
                out.println();
                report("claim (write on " + node + ") → ready", claims, claimRoundTrips);
                report("release → released", releases, releaseRoundTrips);
            } finally {
                stop.set(true);
                consumer.wakeup();
                reader.join(TimeUnit.SECONDS.toMillis(10));
            }
        }
        deregister(namespace, volume);
        return 0;
    }

    /** What one request took: each hop's offset from the request (ms) and the client's round trip (µs). */
    record Cycle(Map<String, Long> offsets, long roundTripMicros) {
    }

    private Cycle cycle(KafkaProducer<String, byte[]> producer, ClaimRequested request, ClaimState expected)
            throws Exception {
        String alloc = request.allocationId();
        String volume = request.volumeId();
        hops.put(volume, java.util.Collections.synchronizedList(new ArrayList<>()));
        CompletableFuture<ClaimStatus> done = new CompletableFuture<>();
        waiting.put(alloc + "/" + expected.wire(), done);
        ProducerRecord<String, byte[]> record = ClaimClient.record(topics, request, ClaimClient.newTraceparent());
        long started = System.nanoTime();
        RecordMetadata sent = producer.send(record).get(30, TimeUnit.SECONDS);
        ClaimStatus status;
        try {
            status = done.get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new Operator.Failure("no claim-status " + expected.wire() + " for " + alloc + " within "
                    + STEP_TIMEOUT.toSeconds() + " s; seen: " + hops.get(volume));
        }
        long roundTrip = (System.nanoTime() - started) / 1000;
        if (status.state() != expected) {
            throw new Operator.Failure(request.mode().wire() + " of " + alloc + " ended " + status.state().wire()
                    + (status.reason() == null ? "" : " (" + status.reason() + ")"));
        }
        Map<String, Long> offsets = new LinkedHashMap<>();
        List<Hop> seen;
        synchronized (hops.get(volume)) {
            seen = new ArrayList<>(hops.remove(volume));
        }
        seen.sort(java.util.Comparator.comparingLong(Hop::timestamp));
        for (Hop hop : seen) {
            offsets.putIfAbsent(hop.label(), hop.timestamp() - sent.timestamp());
        }
        return new Cycle(offsets, roundTrip);
    }

    private void read(KafkaConsumer<String, String> consumer) {
        String statusTopic = topics.name(Topic.CLAIM_STATUS);
        String commandTopic = topics.name(Topic.NODE_COMMANDS);
        while (!stop.get()) {
            try {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofSeconds(1))) {
                    try {
                        if (r.topic().equals(statusTopic)) {
                            ClaimStatus s = EventCodec.decode(ClaimStatus.class, r.value());
                            note(s.volumeId(), "claim-status " + s.state().wire(), r.timestamp());
                            CompletableFuture<ClaimStatus> f = waiting.remove(s.allocationId() + "/" + s.state().wire());
                            if (f == null && (s.state() == ClaimState.FAILED || s.state() == ClaimState.REJECTED)) {
                                f = waiting.remove(s.allocationId() + "/" + ClaimState.READY.wire());
                                if (f == null) {
                                    f = waiting.remove(s.allocationId() + "/" + ClaimState.RELEASED.wire());
                                }
                            }
                            if (f != null) {
                                f.complete(s);
                            }
                        } else if (r.topic().equals(commandTopic)) {
                            NodeCommand c = EventCodec.decode(NodeCommand.class, r.value());
                            note(c.volumeId(), "node-commands " + c.kind().wire(), r.timestamp());
                        } else {
                            MountDone d = EventCodec.decode(MountDone.class, r.value());
                            note(d.volumeId(), "mount-done " + d.kind().wire()
                                    + (Boolean.TRUE.equals(d.success()) ? "" : " (failed)"), r.timestamp());
                        }
                    } catch (MalformedEventException e) {
                        // not ours to judge; the services dead-letter it
                    }
                }
            } catch (org.apache.kafka.common.errors.WakeupException e) {
                return;
            }
        }
    }

    private void note(String volume, String label, long timestamp) {
        if (volume == null) {
            return;
        }
        List<Hop> list = hops.get(volume);
        if (list != null) {
            list.add(new Hop(label, timestamp));
        }
    }

    private void report(String title, List<Map<String, Long>> cycles, List<Long> roundTripsMicros) {
        out.println();
        out.println(title + " (" + cycles.size() + " cycles; ms since claim-requested was written)");
        Map<String, List<Long>> byHop = new LinkedHashMap<>();
        for (Map<String, Long> cycle : cycles) {
            cycle.forEach((label, offset) -> byHop.computeIfAbsent(label, k -> new ArrayList<>()).add(offset));
        }
        List<Map.Entry<String, List<Long>>> ordered = new ArrayList<>(byHop.entrySet());
        ordered.sort(java.util.Comparator.comparingLong(e -> percentile(e.getValue(), 50)));
        Table table = new Table("HOP", "SEEN", "P50", "P90", "MAX");
        for (Map.Entry<String, List<Long>> e : ordered) {
            List<Long> v = e.getValue();
            table.row(e.getKey(), v.size() + "/" + cycles.size(), percentile(v, 50), percentile(v, 90),
                    percentile(v, 100));
        }
        List<Long> millis = new ArrayList<>();
        roundTripsMicros.forEach(us -> millis.add(us / 1000));
        table.row("client round trip (send → status read)", millis.size() + "/" + cycles.size(),
                percentile(millis, 50), percentile(millis, 90), percentile(millis, 100));
        out.print(table.render());
    }

    static long percentile(List<Long> values, int p) {
        if (values.isEmpty()) {
            return -1;
        }
        List<Long> sorted = new ArrayList<>(values);
        sorted.sort(null);
        int rank = (int) Math.ceil(p / 100.0 * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }

    private void prepareVolume(String namespace, String volume) throws Exception {
        Path work = Up.workDir(args, Main.home(args));
        List<Path> sockets = new ArrayList<>();
        for (String n : Cluster.NODES) {
            Path socket = work.resolve(n).resolve("plugins").resolve(Cluster.PLUGIN_ID).resolve("csi.sock");
            if (!Files.exists(socket)) {
                throw new Operator.Failure("no plugin socket " + socket + " (is the local system up? ./csi up)");
            }
            sockets.add(socket);
        }
        String externalId = PluginVolumes.create(volume, sockets);
        Map<String, Object> body = Map.of("id", volume, "namespace", namespace, "name", volume,
                "externalId", externalId, "pluginId", Cluster.PLUGIN_ID,
                "accessMode", AccessMode.MULTI_NODE_SINGLE_WRITER.wire(),
                "attachmentMode", AttachmentMode.FILE_SYSTEM.wire());
        Http claims = new Http("claim-service", endpoints.claimsUrl(), endpoints.token());
        Http.Response r = claims.post("/v1/volumes", Http.MAPPER.writeValueAsString(body));
        if (r.status() != 201) {
            throw new Operator.Failure("claim-service refused the volume (HTTP " + r.status() + "): " + r.raw());
        }
        Wait.until("volume " + volume + " schedulable", Duration.ofSeconds(60), null, () -> {
            Http.Response s = claims.get("/v1/volumes/" + namespace + "/" + volume);
            return s.ok() && s.body() != null && s.body().path("schedulable").asBoolean()
                    ? java.util.Optional.of(true) : java.util.Optional.empty();
        });
    }

    private void deregister(String namespace, String volume) {
        try {
            new Http("claim-service", endpoints.claimsUrl(), endpoints.token()).delete("/v1/volumes/" + namespace + "/" + volume);
        } catch (RuntimeException e) {
            out.println("note: could not deregister " + namespace + "/" + volume + ": " + e.getMessage());
        }
    }

    /**
     * The file of {@code --json F}. {@code -json} is the CLI's output flag elsewhere (Args parses it without a
     * value), so the file arrives as the one positional argument of {@code bench}.
     */
    static Optional<Path> jsonFile(Args args) {
        Optional<String> positional = args.positionalOpt(0);
        if (positional.isPresent() && !args.flag("json")) {
            throw new Args.UsageException("unexpected argument '" + positional.get() + "' (the JSON file: --json F)");
        }
        if (args.flag("json") && positional.isEmpty()) {
            throw new Args.UsageException("--json needs a file name");
        }
        return positional.map(Path::of);
    }

    /** A whole-number option from {@code min} to {@code max}, or {@code fallback} if absent. */
    static long parseLong(Args args, String name, long fallback, long min, long max) {
        String value = args.option(name).orElse(null);
        if (value == null) {
            return fallback;
        }
        try {
            long n = Long.parseLong(value);
            if (n < min || n > max) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new Args.UsageException("--" + name + " must be a whole number from " + min + " to " + max
                    + ", not '" + value + "'");
        }
    }

    /** A rate in operations per second: {@code 20}, {@code 20/s}, {@code 0.5}. */
    static double parseRate(String value) {
        String v = value.endsWith("/s") ? value.substring(0, value.length() - 2) : value;
        try {
            double rate = Double.parseDouble(v);
            if (!(rate > 0) || rate > 1_000_000) {
                throw new NumberFormatException();
            }
            return rate;
        } catch (NumberFormatException e) {
            throw new Args.UsageException("a rate is operations per second above 0 (e.g. 20 or 20/s), not '"
                    + value + "'");
        }
    }

    /** A duration option: {@code 30s}, {@code 250ms}, {@code 2m}, or plain seconds. */
    static Duration parseDuration(Args args, String name, Duration fallback) {
        return args.option(name).map(v -> parseDuration(name, v)).orElse(fallback);
    }

    static Duration parseDuration(String name, String value) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m)?").matcher(value.trim());
        if (!m.matches()) {
            throw new Args.UsageException("--" + name + " takes a duration like 30s, 250ms or 2m, not '" + value + "'");
        }
        double n = Double.parseDouble(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        double millis = switch (unit) {
            case "ms" -> n;
            case "m" -> n * 60_000;
            default -> n * 1000;
        };
        return Duration.ofNanos((long) (millis * 1_000_000));
    }

    private int intOption(String name, int fallback) {
        String value = args.option(name).orElse(null);
        if (value == null) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(value);
            if (n < 0 || n > 100_000) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new Args.UsageException("--" + name + " must be a whole number from 0 to 100000, not '" + value + "'");
        }
    }
}
