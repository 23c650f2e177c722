package io.csiorchestrator.cli;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.localinfra.NetNamespace;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Issue 19's fencing faults in {@code ./csi chaos}, each on a single-node-writer volume of its own
 * ({@code fence-<n>}) while the suite's load goes on around it:
 * <ul>
 *   <li>{@code partition-node-1}, {@code -in}, {@code -out}: node-1's worker and plugin run in a network namespace of
 *   their own ({@link NetNamespace}); a writer on node-1, then the cut (both directions, only packets to node-1,
 *   only packets from node-1), the scheduler releases the writer's allocation, a write claim for the same volume on
 *   node-2 is retried until ready (or the bound passed), then the heal;</li>
 *   <li>{@code freeze-worker-node-1}: the same with node-1's worker stopped (SIGSTOP of its real pid) instead of cut
 *   off, for at least the lease ttl x (1 + drift) + budget, then SIGCONT;</li>
 *   <li>{@code partition-node-1-claims-restart}: the partition (both ways) with claim-service killed (-9) and started
 *   again right after the cut;</li>
 *   <li>{@code detach-live-node-2}: a writer on node-2 (live, not cut), then the operator's
 *   {@code POST /v1/volumes/<ns>/<id>/detach?node=node-2}: the claim must be freed only after node-2 unmounted.</li>
 * </ul>
 * Meanwhile a sampler reads this process's mount table every {@value #SAMPLE_MILLIS} ms (the workers' bind mounts
 * are in the one mount namespace of the machine) and records every change of the volume's writable publish
 * targets per node. {@link FenceCheck} judges each run.
 */
final class FenceFaults {

    static final List<String> FAULTS = List.of("partition-node-1", "partition-node-1-in", "partition-node-1-out",
            "freeze-worker-node-1", "partition-node-1-claims-restart", "detach-live-node-2");
    static final String OLD_NODE = "node-1";
    static final String NEW_NODE = "node-2";
    static final long SAMPLE_MILLIS = 50;
    /** How long a writer's claim may take to get ready before a run (not a fault) is given up. */
    static final Duration SETUP_WAIT = Duration.ofSeconds(120);
    /** The release of the writer's allocation comes this long after the fault (a part of the fault's definition). */
    static final Duration RELEASE_AFTER = Duration.ofSeconds(2);

    /** What the suite offers a fence run: its producer, its reader's answers and node events. */
    interface Feed {
        /** Sends a claim request; returns the record's timestamp. */
        long send(ClaimRequested request) throws Exception;

        /** The final answer to a request, once the reader has it. */
        Optional<ChaosCheck.Answer> finalAnswer(ClaimRequested request);

        /** The node events about {@code volume} read so far. */
        List<ChaosCheck.NodeEv> nodeEvents(String volume);
    }

    /** One fault's outcome: its times, what was done, and its violations. */
    record Outcome(long start, long end, String what, List<ChaosCheck.Violation> violations) {
    }

    private final Cluster cluster;
    private final PrintStream out;
    private final FenceCheck.Timers timers;
    private final Feed feed;
    private final String namespace;
    private final Map<String, String> volumes = new HashMap<>();
    private final Map<String, List<FenceCheck.MountSample>> samples = new HashMap<>();
    private final Map<String, List<String>> lastSeen = new HashMap<>();
    private ScheduledExecutorService sampler;
    private long sequence;
    /** When the liveness bound starts counting: the fault, or claim-service's restart (it treats leases as new). */
    private long boundFrom;

    FenceFaults(Cluster cluster, PrintStream out, FenceCheck.Timers timers, Feed feed, String namespace) {
        this.cluster = cluster;
        this.out = out;
        this.timers = timers;
        this.feed = feed;
        this.namespace = namespace;
        for (int i = 0; i < FAULTS.size(); i++) {
            volumes.put(FAULTS.get(i), "fence-" + i);
        }
    }

    static boolean isFenceFault(String name) {
        return FAULTS.contains(name);
    }

    /** Whether any of {@code faults} needs node-1 in a network namespace. */
    static boolean needsNamespace(List<String> faults) {
        return faults.stream().anyMatch(f -> f.startsWith("partition-"));
    }

    /** The volume of {@code fault} (single-node-writer, created with the others). */
    String volume(String fault) {
        return volumes.get(fault);
    }

    /** The volumes of {@code faults}, to create and register with the suite's own. */
    List<String> volumesOf(List<String> faults) {
        return faults.stream().filter(FenceFaults::isFenceFault).map(this::volume).toList();
    }

    FenceCheck.Timers timers() {
        return timers;
    }

    // ------------------------------------------------------------------ the sampler

    /** Starts sampling the mount table for {@code vols} on both nodes. */
    void startSampling(List<String> vols) {
        if (vols.isEmpty()) {
            return;
        }
        synchronized (samples) {
            vols.forEach(v -> samples.put(v, new ArrayList<>()));
        }
        sampler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "csi-chaos-mount-sampler");
            t.setDaemon(true);
            return t;
        });
        // at a fixed rate: the sampling period itself (a sample that overruns delays the next, never doubles it)
        sampler.scheduleAtFixedRate(() -> {
            try {
                sample();
            } catch (RuntimeException e) {
                // one sample lost; a thrown exception would cancel every later one
            }
        }, 0, SAMPLE_MILLIS, TimeUnit.MILLISECONDS);
    }

    void stopSampling() {
        if (sampler != null) {
            sampler.shutdownNow();
        }
    }

    private void sample() {
        MountTable table;
        try {
            table = MountTable.readSelf();
        } catch (RuntimeException e) {
            return;
        }
        long at = System.currentTimeMillis();
        synchronized (samples) {
            for (String vol : samples.keySet()) {
                for (String node : Cluster.NODES) {
                    List<String> writable = writableTargets(table, node, vol);
                    String key = vol + "@" + node;
                    if (!writable.equals(lastSeen.getOrDefault(key, List.of()))) {
                        lastSeen.put(key, writable);
                        samples.get(vol).add(new FenceCheck.MountSample(at, node, writable));
                    }
                }
            }
        }
    }

    /** The read-write publish targets of {@code vol} on {@code node}: {@code <root>/per-alloc/<alloc>/<ns>/<vol>}. */
    List<String> writableTargets(MountTable table, String node, String vol) {
        Path perAlloc = cluster.workerRoot(node).resolve("per-alloc");
        String suffix = "/" + namespace + "/" + vol;
        return table.mountsUnder(perAlloc).stream().filter(m -> !m.readOnly())
                .map(MountInfo::mountPoint).filter(p -> p.endsWith(suffix)).distinct().sorted().toList();
    }

    private List<FenceCheck.MountSample> samplesOf(String vol) {
        synchronized (samples) {
            return List.copyOf(samples.getOrDefault(vol, List.of()));
        }
    }

    private List<String> mountedNow(String node, String vol) {
        synchronized (samples) {
            return lastSeen.getOrDefault(vol + "@" + node, List.of());
        }
    }

    // ------------------------------------------------------------------ the runs

    /** Runs {@code fault}, saying to {@code waitingFor} what it waits for at each phase (the progress lines). */
    Outcome run(String fault, java.util.function.Consumer<String> waitingFor) throws Exception {
        this.waitingFor = waitingFor;
        return fault.equals("detach-live-node-2") ? detach(fault) : failover(fault);
    }

    private java.util.function.Consumer<String> waitingFor = what -> {
    };

    private Outcome failover(String fault) throws Exception {
        String vol = volume(fault);
        String writer = "fw" + (++sequence);
        waitingFor.accept("the writer's claim of " + vol + " on " + OLD_NODE + " to be ready (before the fault)");
        Optional<ChaosCheck.Answer> ready = claimUntilReady(vol, writer, OLD_NODE, System.currentTimeMillis()
                + SETUP_WAIT.toMillis());
        if (ready.isEmpty()) {
            throw new IllegalStateException(fault + ": the writer's claim of " + vol + " on " + OLD_NODE
                    + " was not ready within " + SETUP_WAIT.toSeconds() + " s (before any fault)");
        }
        awaitMounted(OLD_NODE, vol, true, Duration.ofSeconds(30));

        long faultStart = System.currentTimeMillis();
        boundFrom = faultStart;
        String what = startFault(fault);
        long bound = timers.boundMillis();
        // The scheduler gives up on the allocation RELEASE_AFTER the fault: past a Kafka fetch that was in flight at the
        // cut (the broker answers a long poll within fetch.max.wait.ms, 500 ms), which with packets to the node still
        // let through (partition-node-1-out) would hand node-1 the unmount and hide the failover this fault is about.
        pauseUntil(faultStart + RELEASE_AFTER.toMillis());
        feed.send(ClaimClient.release(namespace, vol, writer));
        String newAlloc = "fw" + (++sequence);
        waitingFor.accept(NEW_NODE + "'s claim of " + vol + " to be ready: claim-service frees " + OLD_NODE
                + "'s claim only after the fencing floor (" + timers + "; given up after "
                + Duration.ofMillis(bound).plusSeconds(10).toSeconds() + " s)");
        Optional<ChaosCheck.Answer> newReady = claimUntilReady(vol, newAlloc, NEW_NODE, boundFrom + bound
                + Duration.ofSeconds(10).toMillis());
        if (fault.equals("freeze-worker-node-1")) {
            // frozen for longer than the lease: past the worker's own expiry and the registry's lapse
            long minimum = faultStart + Math.round(timers.leaseTtl().toMillis() * (1 + timers.clockDrift()))
                    + timers.budget().toMillis();
            waitingFor.accept("the freeze to outlast " + OLD_NODE + "'s lease (until "
                    + TimeUnit.MILLISECONDS.toSeconds(minimum - faultStart) + " s after the fault)");
            pauseUntil(minimum);
        }
        String healed = endFault(fault);
        long healAt = System.currentTimeMillis();

        // After the heal: node-1 back, then its mount of the volume must go (the release reaches it, or it fenced).
        waitingFor.accept(OLD_NODE + "'s worker back after the heal, and its mount of " + vol + " gone");
        if (fault.startsWith("partition-") || fault.startsWith("freeze-")) {
            Cluster.Proc worker = cluster.proc("node-mount-worker-" + OLD_NODE).orElseThrow();
            try {
                cluster.awaitReady(worker, cluster.workerUrl(OLD_NODE), Duration.ofSeconds(120));
            } catch (RuntimeException e) {
                out.println("csi chaos: note: " + OLD_NODE + "'s worker not ready after the heal: " + e.getMessage());
            }
        }
        awaitMounted(OLD_NODE, vol, false, Duration.ofSeconds(60).plus(timers.commandTimeout()));
        // a few sampling periods more to see whether node-1 acts on anything of before the fault
        pauseUntil(System.currentTimeMillis() + 3_000);
        long watchedUntil = System.currentTimeMillis();
        newReady.ifPresent(a -> releaseQuietly(vol, newAlloc));

        FenceCheck.FenceRun run = new FenceCheck.FenceRun(fault, vol, OLD_NODE, NEW_NODE, boundFrom,
                newReady.map(ChaosCheck.Answer::at).orElse(-1L), healAt, watchedUntil, bound, samplesOf(vol),
                feed.nodeEvents(vol));
        List<ChaosCheck.Violation> violations = FenceCheck.check(run);
        String story = what + "; released " + writer + ", " + NEW_NODE + "'s claim "
                + newReady.map(a -> "ready " + (a.at() - faultStart) + " ms after the fault"
                        + (boundFrom != faultStart ? ", " + (a.at() - boundFrom) + " ms after claim-service's restart" : ""))
                        .orElse("never ready")
                + " (" + timers + "); " + healed;
        return new Outcome(faultStart, healAt, story, violations);
    }

    private String startFault(String fault) throws Exception {
        switch (fault) {
            case "partition-node-1", "partition-node-1-claims-restart" -> {
                namespace().cut(NetNamespace.Direction.BOTH);
                if (fault.endsWith("claims-restart")) {
                    long pid = cluster.kill9("claim-service");
                    Cluster.Proc p = cluster.restart("claim-service");
                    cluster.awaitReady(p, cluster.claimsUrl(), Demo.START_TIMEOUT);
                    // after its restart claim-service treats every lease as just granted: the bound counts from here
                    boundFrom = System.currentTimeMillis();
                    return "cut " + OLD_NODE + " off both ways (" + namespace() + "), kill -9 claim-service (pid "
                            + pid + "), restarted (pid " + p.handle().pid() + ")";
                }
                return "cut " + OLD_NODE + " off both ways (" + namespace() + ")";
            }
            case "partition-node-1-in" -> {
                namespace().cut(NetNamespace.Direction.IN);
                return "cut packets to " + OLD_NODE + " (" + namespace() + ")";
            }
            case "partition-node-1-out" -> {
                namespace().cut(NetNamespace.Direction.OUT);
                return "cut packets from " + OLD_NODE + " (" + namespace() + ")";
            }
            case "freeze-worker-node-1" -> {
                long pid = signal("node-mount-worker-" + OLD_NODE, "STOP");
                return "SIGSTOP node-mount-worker-" + OLD_NODE + " (pid " + pid + ")";
            }
            default -> throw new IllegalArgumentException(fault);
        }
    }

    private String endFault(String fault) throws Exception {
        if (fault.equals("freeze-worker-node-1")) {
            long pid = signal("node-mount-worker-" + OLD_NODE, "CONT");
            return "SIGCONT (pid " + pid + ")";
        }
        namespace().heal();
        return "healed";
    }

    private NetNamespace namespace() {
        return cluster.namespace(OLD_NODE).orElseThrow(() -> new IllegalStateException(OLD_NODE
                + " runs in no network namespace of its own"));
    }

    private long signal(String proc, String signal) throws Exception {
        long pid = cluster.proc(proc).orElseThrow().handle().pid();
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true).start();
        String text = new String(kill.getInputStream().readAllBytes());
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + signal + " " + pid + ": " + text);
        }
        return pid;
    }

    private Outcome detach(String fault) throws Exception {
        String vol = volume(fault);
        String alloc = "fd" + (++sequence);
        if (claimUntilReady(vol, alloc, NEW_NODE, System.currentTimeMillis() + SETUP_WAIT.toMillis()).isEmpty()) {
            throw new IllegalStateException(fault + ": the claim of " + vol + " on " + NEW_NODE + " was not ready");
        }
        awaitMounted(NEW_NODE, vol, true, Duration.ofSeconds(30));
        Http claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        waitingFor.accept(NEW_NODE + " to report the unmount of " + vol + " and its claim to be freed");
        long detachAt = System.currentTimeMillis();
        Http.Response answer = claims.post("/v1/volumes/" + namespace + "/" + vol + "/detach?node=" + NEW_NODE, "{}");
        long deadline = detachAt + timers.commandTimeout().toMillis() + Duration.ofSeconds(30).toMillis();
        long freedAt = -1;
        List<String> mountedWhenFreed = List.of();
        while (System.currentTimeMillis() < deadline) {
            Http.Response r = claims.get("/v1/volumes/" + namespace + "/" + vol);
            long at = System.currentTimeMillis();
            if (r.ok() && r.body() != null && !holds(r.body(), alloc)) {
                // the mount table read after the answer that shows the claim freed
                mountedWhenFreed = writableTargets(MountTable.readSelf(), NEW_NODE, vol);
                freedAt = at;
                break;
            }
            pauseUntil(System.currentTimeMillis() + SAMPLE_MILLIS);
        }
        awaitMounted(NEW_NODE, vol, false, Duration.ofSeconds(30));
        long end = System.currentTimeMillis();
        List<ChaosCheck.Violation> violations = FenceCheck.check(new FenceCheck.DetachRun(fault, vol, NEW_NODE, detachAt,
                freedAt, mountedWhenFreed, answer.status()));
        return new Outcome(detachAt, end, "detach " + vol + " from the live " + NEW_NODE + " (HTTP " + answer.status()
                + "), claim freed " + (freedAt < 0 ? "never" : (freedAt - detachAt) + " ms later")
                + (mountedWhenFreed.isEmpty() ? "" : " while still mounted"), violations);
    }

    private static boolean holds(JsonNode volume, String alloc) {
        for (JsonNode c : volume.path("claims")) {
            if (alloc.equals(c.path("allocationId").asText())) {
                return true;
            }
        }
        return false;
    }

    // ------------------------------------------------------------------ helpers

    /**
     * Sends a write claim of {@code vol} for {@code alloc} on {@code node} and, while it is answered anything but
     * ready, again (a second later), until {@code deadline}. Returns the ready answer.
     */
    private Optional<ChaosCheck.Answer> claimUntilReady(String vol, String alloc, String node, long deadline)
            throws Exception {
        while (System.currentTimeMillis() < deadline) {
            ClaimRequested claim = ClaimClient.claim(namespace, vol, alloc, node, ClaimMode.WRITE,
                    AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM);
            try {
                feed.send(claim);
            } catch (Exception e) {
                out.println("csi chaos: note: sending a claim of " + vol + " failed: " + e);
                pauseUntil(System.currentTimeMillis() + 1_000);
                continue;
            }
            Optional<ChaosCheck.Answer> answer = awaitAnswer(claim, deadline);
            if (answer.isEmpty()) {
                return Optional.empty();
            }
            if (answer.get().state() == ClaimState.READY) {
                return answer;
            }
            pauseUntil(System.currentTimeMillis() + 1_000); // retry pace of a scheduler, not a wait for a condition
        }
        return Optional.empty();
    }

    private Optional<ChaosCheck.Answer> awaitAnswer(ClaimRequested request, long deadline) {
        while (System.currentTimeMillis() < deadline) {
            Optional<ChaosCheck.Answer> a = feed.finalAnswer(request);
            if (a.isPresent()) {
                return a;
            }
            pauseUntil(System.currentTimeMillis() + 100);
        }
        return feed.finalAnswer(request);
    }

    private void releaseQuietly(String vol, String alloc) {
        try {
            ClaimRequested release = ClaimClient.release(namespace, vol, alloc);
            feed.send(release);
            awaitAnswer(release, System.currentTimeMillis() + 60_000);
        } catch (Exception e) {
            out.println("csi chaos: note: releasing " + alloc + " of " + vol + " failed: " + e);
        }
    }

    /** Waits (bounded) until the sampler saw {@code vol} writable on {@code node} ({@code mounted}) or not. */
    private boolean awaitMounted(String node, String vol, boolean mounted, Duration timeout) {
        long deadline = System.currentTimeMillis() + timeout.toMillis();
        while (System.currentTimeMillis() < deadline) {
            if (mountedNow(node, vol).isEmpty() != mounted) {
                return true;
            }
            pauseUntil(System.currentTimeMillis() + SAMPLE_MILLIS);
        }
        out.println("csi chaos: note: " + vol + " still " + (mounted ? "not " : "") + "mounted on " + node + " after "
                + timeout.toSeconds() + " s (" + Instant.now() + ")");
        return false;
    }

    private static void pauseUntil(long at) {
        long left = at - System.currentTimeMillis();
        if (left <= 0) {
            return;
        }
        try {
            Thread.sleep(left);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
    }
}
