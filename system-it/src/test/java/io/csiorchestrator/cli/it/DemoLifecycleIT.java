package io.csiorchestrator.cli.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.cli.ClaimClient;
import io.csiorchestrator.cli.Cluster;
import io.csiorchestrator.cli.Demo;
import io.csiorchestrator.cli.Mounts;
import io.csiorchestrator.cli.Steps;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The demo's lifecycle across separate processes (Kafka and PostgreSQL, claim-service,
 * plugin-registry-service, two node-mount-workers, two hostpath plugins): the volume created through
 * claim-service, written on node-1, read back on node-2, snapshotted, restored into a new volume whose
 * file is read back, then both volumes and the snapshot deleted through claim-service (issue 14). The demo
 * checks the mount table (mounted, read-write/read-only, unmounted) and the file's contents at every
 * step; this test asserts that every step passed, that the plugins created and deleted what the demo
 * asked for through the services, and that nothing is left (no process, no mount, no volume or snapshot
 * directory, no Kafka log or PostgreSQL data: the demo's are throw-away).
 */
class DemoLifecycleIT {

    private Cluster cluster;

    @AfterEach
    void cleanUp() {
        if (cluster != null) {
            cluster.stopAll(java.time.Duration.ofSeconds(30));
            Mounts.unmountAllUnder(cluster.workDir());
        }
    }

    @Test
    void volumeCreatedThroughTheServicesIsWrittenReadSnapshottedRestoredAndDeleted() throws Exception {
        Path home = Path.of(System.getProperty("csi.home", "..")).toAbsolutePath().normalize();
        Path work = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "e2e-");
        cluster = new Cluster(home, work, Cluster.Ports.free(), false).jsonLogs(true);
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(output, true, StandardCharsets.UTF_8);
        Demo demo = new Demo(cluster, new PrintStream(new TeeStream(out, System.out), true, StandardCharsets.UTF_8));

        int code = demo.run();

        List<Steps.Result> results = demo.steps().results();
        assertEquals(0, code, output.toString(StandardCharsets.UTF_8));
        assertEquals(Demo.STEPS, results.size(), output.toString(StandardCharsets.UTF_8));
        for (Steps.Result result : results) {
            assertTrue(result.ok(), result.name() + ": " + result.detail());
        }
        assertTrue(results.get(5).detail().startsWith("externalId "), results.get(5).detail());
        assertTrue(results.get(7).detail().contains("mounted read-write at " + work), results.get(7).detail());
        // issue 34: the usage node-1's worker reported (NodeGetVolumeStats) as the volume's REST detail shows it
        assertTrue(results.get(9).detail().contains(" used, "), results.get(9).detail());
        assertTrue(results.get(11).detail().contains("mounted read-only at " + work), results.get(11).detail());
        assertEquals("content matches; writes are refused", results.get(12).detail());
        assertTrue(results.get(14).detail().endsWith("ready to use"), results.get(14).detail());
        assertTrue(results.get(15).detail().contains("from demo-snapshot"), results.get(15).detail());
        assertTrue(results.get(16).detail().startsWith("the snapshot's content, read at " + work), results.get(16).detail());
        // issue 34: a claim that ignores placement (node-1 is not in the volume's topology) is rejected precisely
        assertTrue(results.get(17).detail().startsWith("rejected: node node-1 is outside the volume's topology"),
                results.get(17).detail());
        assertEquals(List.of(), Mounts.under(work), "mounts left under " + work);
        for (Cluster.Proc proc : cluster.procs()) {
            assertFalse(proc.handle().isAlive(), proc.name() + " still runs");
        }
        // The demo is throw-away: its Kafka log and PostgreSQL data are gone with their processes.
        assertFalse(Files.exists(cluster.kafkaDir()), cluster.kafkaDir() + " is left");
        assertFalse(Files.exists(cluster.postgresDir()), cluster.postgresDir() + " is left");
        // Every claim and release came back in the trace its claim-requested started (carried through
        // claim-service's outbox, node-commands, the worker, mount-done and back to claim-status).
        assertEquals(6, demo.outcomes().size());
        for (ClaimClient.Outcome outcome : demo.outcomes()) {
            assertTrue(outcome.traceCarried(), "trace " + outcome.traceId() + " came back as " + outcome.statusTraceId());
        }
        // The services logged JSON lines (asked for with QUARKUS_LOG_CONSOLE_JSON_ENABLED), with the trace id of
        // the work they did: claim-service's lines about the first claim carry its trace id.
        String firstTrace = demo.outcomes().get(0).traceId();
        for (String service : List.of("claim-service", "plugin-registry-service", "node-mount-worker-node-1")) {
            List<String> lines = Files.readAllLines(cluster.logs().resolve(service + ".log"));
            List<String> json = lines.stream().filter(l -> l.startsWith("{")).toList();
            assertTrue(json.size() > 5, service + " logged no JSON lines: " + lines.subList(0, Math.min(5, lines.size())));
            for (String line : json) {
                assertTrue(new com.fasterxml.jackson.databind.ObjectMapper().readTree(line).has("message"), line);
            }
        }
        assertTrue(Files.readAllLines(cluster.logs().resolve("claim-service.log")).stream()
                .anyMatch(l -> l.startsWith("{") && l.contains(firstTrace)), "no claim-service log line in trace " + firstTrace);
        // The volumes and the snapshot were made and removed by the plugins' controller RPCs that claim-service's
        // node commands asked for (whichever node's plugin answered): two CreateVolume (one from the snapshot), one
        // CreateSnapshot, and their deletes (at least: a call re-sent by the same name answers OK again); nothing of
        // them is left in the shared volume or snapshot directories.
        List<String> calls = new java.util.ArrayList<>();
        for (String node : Cluster.NODES) {
            Path log = cluster.nodeDir(node).resolve("hostpath-state").resolve("calls.log");
            calls.addAll(Files.readAllLines(log));
        }
        assertTrue(calls.stream().filter(c -> c.equals("CreateVolume OK")).count() >= 2, calls.toString());
        assertTrue(calls.stream().filter(c -> c.equals("CreateSnapshot OK")).count() >= 1, calls.toString());
        assertTrue(calls.stream().filter(c -> c.equals("DeleteVolume OK")).count() >= 2, calls.toString());
        assertTrue(calls.stream().filter(c -> c.equals("DeleteSnapshot OK")).count() >= 1, calls.toString());
        try (var left = Files.list(cluster.hostpathShared().resolve("volumes"))) {
            assertEquals(List.of(), left.toList(), "volume directories left");
        }
        Path snapshots = cluster.hostpathShared().resolve("snapshots");
        if (Files.exists(snapshots)) {
            try (var left = Files.list(snapshots)) {
                assertEquals(List.of(), left.toList(), "snapshot directories left");
            }
        }
        // Each claim was controller-published (to node-1, node-2, node-1) and unpublished on release, whichever
        // node's plugin answered; none is left in the plugins' shared controller state.
        assertEquals(3, calls.stream().filter(c -> c.equals("ControllerPublishVolume OK")).count(), calls.toString());
        assertTrue(calls.stream().filter(c -> c.equals("ControllerUnpublishVolume OK")).count() >= 3, calls.toString());
        assertFalse(Files.readString(cluster.hostpathShared().resolve("controller-publications.json"))
                .contains("\"nodeId\""), "a controller publication is left");
    }

    /** Copies the demo's output to the test log as well. */
    private static final class TeeStream extends java.io.OutputStream {
        private final java.io.OutputStream a;
        private final java.io.OutputStream b;

        TeeStream(java.io.OutputStream a, java.io.OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public void write(int value) throws java.io.IOException {
            a.write(value);
            b.write(value);
        }

        @Override
        public void write(byte[] bytes, int off, int len) throws java.io.IOException {
            a.write(bytes, off, len);
            b.write(bytes, off, len);
        }

        @Override
        public void flush() throws java.io.IOException {
            a.flush();
            b.flush();
        }
    }
}
