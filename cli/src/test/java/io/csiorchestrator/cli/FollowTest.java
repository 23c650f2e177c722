package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.VolumeState;
import io.csiorchestrator.events.VolumeStatus;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@code ./csi events} lines and {@code volume status -w}'s printing on change (pure parts; the IT runs them live). */
class FollowTest {

    static final Instant AT = Instant.parse("2026-11-24T20:00:00Z");

    /** A claim-status is one table row with its state, volume, allocation, node and host path; -json one object. */
    @Test
    void aClaimStatusIsOneReadableRowOrOneJsonLine() {
        String value = EventCodec.encodeToString(new ClaimStatus("r1", "default", "web", "alloc-1", "node-1",
                ClaimMode.WRITE, ClaimState.READY, null, "/mnt/x", AT));
        String row = Follow.line(true, value, false);
        List<String> cells = List.of(row.trim().split("\\s{2,}"));
        assertEquals(List.of("claim-status", "ready", "default/web", "alloc-1", "node-1", "/mnt/x"), cells.subList(1, 7));
        String json = Follow.line(true, value, true);
        assertTrue(json.startsWith("{\"topic\":\"claim-status\""), json);
        assertTrue(json.contains("\"state\":\"ready\"") && json.contains("\"allocationId\":\"alloc-1\""), json);
        assertEquals(1, json.lines().count());
    }

    /** A node event names its kind, node and plugin; its error follows the message. */
    @Test
    void aNodeEventNamesKindNodePluginAndError() {
        String value = EventCodec.encodeToString(new NodeEvent("node-2", NodeEvent.SUBSYSTEM_CSI, NodeEventKind.MOUNT,
                "Mount volume", "hostpath", "default", "web", "alloc-1", false, "boom", Map.of(), AT));
        String row = Follow.line(false, value, false);
        assertTrue(row.contains("node-events") && row.contains("mount") && row.contains("node-2")
                && row.contains("plugin hostpath: Mount volume (boom)"), row);
    }

    /**
     * A volume-status result (issue 14) is one row: a created volume with the plugin's id, a failed snapshot with its
     * snapshot id and reason; -json one object.
     */
    @Test
    void aVolumeResultIsOneReadableRowOrOneJsonLine() {
        String created = EventCodec.encodeToString(new VolumeStatus("default", "data", null, "hostpath", VolumeState.CREATED,
                "ext-1", 1L << 20, "created by the plugin and registered", AT));
        List<String> cells = List.of(Follow.volumeLine(created, false).trim().split("\\s{2,}"));
        assertEquals(List.of("volume-status", "created", "default/data", "-", "-", "plugin id ext-1"), cells.subList(1, 7));
        String failed = EventCodec.encodeToString(new VolumeStatus("default", "data", "snap-1", "hostpath",
                VolumeState.CREATE_FAILED, null, null, "CreateSnapshot failed with INTERNAL: disk", AT));
        assertTrue(Follow.volumeLine(failed, false).endsWith("snapshot snap-1: CreateSnapshot failed with INTERNAL: disk"),
                Follow.volumeLine(failed, false));
        String json = Follow.volumeLine(failed, true);
        assertTrue(json.startsWith("{\"topic\":\"volume-status\"") && json.contains("\"state\":\"create-failed\""), json);
        assertNull(Follow.volumeLine("{\"state\":\"created\"}", false));
        String expanded = EventCodec.encodeToString(new VolumeStatus("default", "data", null, "hostpath",
                VolumeState.EXPANDED, "ext-1", 2L << 30, "expanded by the controller and on every node where it is published", AT));
        assertTrue(Follow.volumeLine(expanded, false).contains("expanded") && Follow.volumeLine(expanded, false)
                .endsWith("2147483648 bytes: expanded by the controller and on every node where it is published"),
                Follow.volumeLine(expanded, false));
    }

    /** A record that is not a valid event prints nothing (it is skipped). */
    @Test
    void aMalformedRecordPrintsNothing() {
        assertNull(Follow.line(true, "{\"state\":\"ready\"}", false));
        assertNull(Follow.line(false, "not json", true));
    }

    /** The view is printed first, then only when it changed. */
    @Test
    void watchPrintsAgainOnlyWhenTheViewChanges() {
        AtomicInteger calls = new AtomicInteger();
        List<String> views = List.of("a\n", "a\n", "b\n", "b\n");
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        Follow.watch(() -> {
            int n = calls.getAndIncrement();
            if (n == views.size() - 1) {
                Thread.currentThread().interrupt(); // the last view, then stop as Ctrl-C would
            }
            return views.get(Math.min(n, views.size() - 1));
        }, LiveChanges.none(), Duration.ofMillis(1), Duration.ofMillis(1), Long.MAX_VALUE,
                new PrintStream(buffer, true, StandardCharsets.UTF_8));
        Thread.interrupted();
        String out = buffer.toString(StandardCharsets.UTF_8);
        assertEquals(2, out.lines().filter(l -> l.startsWith("== ")).count(), out);
        assertEquals(List.of("a", "b"), out.lines().filter(l -> !l.startsWith("== ")).toList());
        assertTrue(out.lines().filter(l -> l.startsWith("== ")).skip(1).findFirst().orElseThrow().endsWith("(changed)"));
    }

    @Test
    void forTakesADuration() {
        assertEquals(Duration.ofSeconds(30), Follow.parseDuration("30s"));
        assertEquals(Duration.ofMinutes(5), Follow.parseDuration("5m"));
        assertEquals(Duration.ofMillis(500), Follow.parseDuration("500ms"));
        assertThrows(Args.UsageException.class, () -> Follow.parseDuration("soon"));
    }
}
