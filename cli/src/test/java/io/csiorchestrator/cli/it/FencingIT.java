package io.csiorchestrator.cli.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.cli.Main;
import io.csiorchestrator.cli.Mounts;
import io.csiorchestrator.localinfra.NetNamespace;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 19's short fencing suite through the CLI ({@code ./csi chaos --faults partition-node-1,freeze-worker-node-1,
 * detach-live-node-2}) with short timers: node-1's worker and plugin in a network namespace of their own, a writer of
 * a single-node-writer volume on node-1, then (1) node-1 cut off both ways, (2) node-1's worker frozen (SIGSTOP)
 * for longer than the lease; in each the scheduler releases the writer and a claim on node-2 is retried until ready;
 * then the heal / SIGCONT; (3) the operator's detach of a writer on the live node-2. Asserts exit 0 and, per fault,
 * no violation: node-2's writable target never in the mount table (sampled every 50 ms) together with node-1's, nor
 * its mount event before node-1's unmount; node-2 ready within floor + command timeout + slack of the timers below;
 * node-1 mounts nothing and keeps no mount of the volume after the heal; the detached claim freed only after node-2
 * unmounted. Nothing left mounted, no namespace left.
 *
 * <p>Passes only with fencing (issue 19: leases, self-fencing, guard, claim-service's lease wait, detach semantics).
 * On the code before it, the run fails with {@code two-writers-sampled} / {@code writable-publish-overlap}
 * (node-2 got the volume while node-1's mount stayed) and {@code freed-while-mounted}: the double writer the issue
 * reports. It is therefore excluded from failsafe in cli/pom.xml ({@code fencing.it.exclude}) until the fencing
 * branches are merged; run it with {@code -Dfencing.it.exclude=none}.
 */
class FencingIT {

    /** lease ttl 6 s, drift 0.05, budget 2 s, margin 1 s: floor 9.3 s; command timeout 10 s; slack 20 s. */
    static final String TIMERS = String.join(",", "CSI_FENCING_LEASE_TTL=6s", "CSI_FENCING_CLOCK_DRIFT=0.05",
            "CSI_FENCING_BUDGET=2s", "CSI_FENCING_MARGIN=1s", "CSI_CLAIMS_COMMAND_TIMEOUT=10s",
            // the pre-fencing failover path (registry instance ttl, then node-gone-timeout) made short as well, so
            // that the same run shows the double writer on code without fencing within the bound
            "CSI_REGISTRY_INSTANCE_TTL=20s", "CSI_CLAIMS_NODE_GONE_TIMEOUT=5s");
    private static final List<String> FAULTS = List.of("partition-node-1", "freeze-worker-node-1", "detach-live-node-2");

    private Path work;

    @AfterEach
    void unmountLeftovers() {
        if (work != null) {
            Mounts.unmountAllUnder(work);
        }
    }

    @Test
    void partitionAndFreezeNeverLeaveTwoWritersAndFailOverWithinTheBound() throws Exception {
        work = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "fencing-");
        Path json = work.resolve("fencing.json");
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(output, true, StandardCharsets.UTF_8);
        int code = Main.run(new String[] {"chaos", "--faults", String.join(",", FAULTS), "--volumes", "6",
                "--rate", "2", "--env", TIMERS, "--fence-slack", "20", "--work-dir", work.resolve("system").toString(),
                "--json", json.toString()}, out, out);
        String printed = output.toString(StandardCharsets.UTF_8);
        System.out.print(printed);

        assertTrue(printed.contains("fencing timers: floor 9.3 s = lease-ttl 6s x 1.05 + budget 2s + margin 1s;"
                + " bound 39.3 s"), printed);
        JsonNode report = new ObjectMapper().readTree(json.toFile());
        List<String> faults = new ArrayList<>();
        for (JsonNode row : report.path("rows")) {
            faults.add(row.path("fault").asText());
            assertEquals(0, row.path("violations").size(), row.toString());
        }
        List<String> expected = new ArrayList<>(FAULTS);
        expected.add("final");
        assertEquals(expected, faults);
        assertTrue(report.path("passed").asBoolean(), report.toString());
        assertEquals(0, code, printed);
        assertEquals(List.of(), Mounts.under(work), "mounts left under " + work);
        String mine = NetNamespace.PREFIX + Long.toString(ProcessHandle.current().pid(), 36) + "x";
        try (var names = Files.list(Path.of("/run/netns"))) {
            assertEquals(List.of(), names.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(mine)).toList(),
                    "the run's network namespace was not removed at its end");
        }
    }
}
