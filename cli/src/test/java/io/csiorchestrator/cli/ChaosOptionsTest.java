package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code csi chaos}'s command line: which faults run in which order, and where the JSON goes. */
class ChaosOptionsTest {

    /**
     * --faults picks a subset (the fencing failovers too), run in the suite's order whatever the order given; an
     * unknown fault is refused; without --faults every fault runs, the fencing failovers included.
     */
    @Test
    void faultsRunInTheSuitesOrderAndAnUnknownOneIsRefused() {
        assertEquals(List.of("claims-kill", "worker-kill-node-2", "postgres-kill"),
                Chaos.faults("postgres-kill,claims-kill,worker-kill-node-2", false));
        assertEquals(Chaos.SHORT_FAULTS, Chaos.faults(null, true));
        assertEquals(Chaos.DEFAULT_FAULTS, Chaos.faults(null, false));
        // every fault, the fencing failovers of issue 19 included (the worker's self-fence and the guard are in)
        assertEquals(List.of("claims-kill", "claims-failover", "registry-kill", "worker-kill-node-1", "worker-kill-node-2",
                "plugin-kill-node-1", "plugin-kill-node-2", "kafka-restart", "postgres-kill", "postgres-outage",
                "partition-node-1", "partition-node-1-in", "partition-node-1-out", "freeze-worker-node-1",
                "partition-node-1-claims-restart", "detach-live-node-2"), Chaos.DEFAULT_FAULTS);
        assertEquals(List.of("partition-node-1", "freeze-worker-node-1"),
                Chaos.faults("freeze-worker-node-1,partition-node-1", false));
        Args.UsageException e = assertThrows(Args.UsageException.class, () -> Chaos.faults("worker-kill", false));
        assertTrue(e.getMessage().contains("unknown fault 'worker-kill'"), e.getMessage());
    }

    /** --json F takes the word after it as the file; a stray argument without --json is refused. */
    @Test
    void jsonTakesTheFileAfterItAndAStrayArgumentIsRefused() {
        assertEquals(Optional.of("out.json"), Chaos.jsonFile(Args.parse("--short", "--json", "out.json")));
        assertEquals(Optional.empty(), Chaos.jsonFile(Args.parse("--short")));
        assertThrows(Args.UsageException.class, () -> Chaos.jsonFile(Args.parse("out.json")));
        assertThrows(Args.UsageException.class, () -> Chaos.jsonFile(Args.parse("--json")));
    }
}
