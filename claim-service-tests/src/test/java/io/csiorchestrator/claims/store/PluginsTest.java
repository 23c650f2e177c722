package io.csiorchestrator.claims.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.events.PluginStatus;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The local copy of plugin-status read and written with prepared statements (issue 36 item 3), against the real
 * database: the facts a claim step reads follow every status stored, also one stored by another instance (another
 * replica) after this one had decoded the plugin's status once; node outages begin when an instance healthy before
 * is not, and a tombstone makes the plugin unknown with every instance away.
 */
@QuarkusTest
class PluginsTest {

    @Inject
    Transactions transactions;
    @Inject
    Plugins plugins;

    @Test
    void factsFollowEveryStoredStatusAlsoOneAnotherReplicaStoredAfterThisOneDecodedIt() throws Throwable {
        String plugin = "plugins-test-" + UUID.randomUUID();
        Plugins otherReplica = new Plugins();

        PluginFacts unknown = tx(() -> plugins.facts(plugin));
        assertFalse(unknown.known());
        assertTrue(unknown.outages().isEmpty());

        tx(() -> plugins.apply(plugin, status(plugin, Map.of("node-1", true, "node-2", true), "node-1")));
        PluginFacts both = tx(() -> plugins.facts(plugin));
        assertTrue(both.known());
        assertTrue(both.hasHealthyNode("node-1") && both.hasHealthyNode("node-2"), both.toString());
        assertEquals(List.of("node-1"), both.healthyControllerNodes());
        assertTrue(both.outages().isEmpty(), both.toString());
        assertEquals(both, tx(() -> plugins.facts(plugin)), "read again unchanged: the same facts");

        // Another replica stores node-2 unhealthy and node-2's controller taking over: this instance decoded the
        // plugin's earlier status, and must not keep it.
        Instant before = Instant.now();
        tx(() -> otherReplica.apply(plugin, status(plugin, Map.of("node-1", true, "node-2", false), "node-2")));
        PluginFacts after = tx(() -> plugins.facts(plugin));
        assertTrue(after.hasHealthyNode("node-1"));
        assertFalse(after.hasHealthyNode("node-2"), after.toString());
        assertEquals(List.of("node-2"), after.healthyControllerNodes());
        assertEquals(List.of("node-2"), List.copyOf(after.outages().keySet()), "node-2 was healthy before: an outage");
        assertFalse(after.outages().get("node-2").isBefore(before.minusMillis(1)), after.outages().toString());
        assertTrue(tx(() -> plugins.goneSince(plugin, "node-2", Instant.now().plusSeconds(1))));
        assertFalse(tx(() -> plugins.goneSince(plugin, "node-1", Instant.now().plusSeconds(1))));

        // The same node reported twice in one status: stored once, the last entry as before
        tx(() -> plugins.apply(plugin, status(plugin, List.of(node("node-1", false), node("node-1", true)), "node-1")));
        PluginFacts twice = tx(() -> plugins.facts(plugin));
        assertTrue(twice.hasHealthyNode("node-1"));
        assertEquals(List.of("node-2"), List.copyOf(twice.outages().keySet()), "node-2 no longer reported: still away");

        tx(() -> otherReplica.apply(plugin, null));
        PluginFacts removed = tx(() -> plugins.facts(plugin));
        assertFalse(removed.known(), "a tombstone: unknown to this instance too");
        assertEquals(java.util.Set.of("node-1", "node-2"), removed.outages().keySet(), removed.toString());
        assertNull(tx(() -> plugins.status(plugin)));
    }

    @Test
    void aStatusStoredInTheStepsTransactionIsWhatItsFactsRead() throws Throwable {
        String plugin = "plugins-test-" + UUID.randomUUID();
        tx(() -> plugins.apply(plugin, status(plugin, Map.of("node-1", true), "node-1")));
        assertNotNull(tx(() -> plugins.facts(plugin)));
        PluginFacts sameTx = tx(() -> plugins.apply(plugin, status(plugin, Map.of("node-1", false), "node-1"))
                .chain(() -> plugins.facts(plugin)));
        assertFalse(sameTx.hasHealthyNode("node-1"), sameTx.toString());
        assertTrue(sameTx.outages().containsKey("node-1"));
    }

    private <T> T tx(Supplier<Uni<T>> work) throws Throwable {
        return VertxContextSupport.subscribeAndAwait(() -> transactions.inTransaction(work));
    }

    private static PluginStatus status(String plugin, Map<String, Boolean> nodes, String controllerNode) {
        return status(plugin, nodes.entrySet().stream().sorted(Map.Entry.comparingByKey())
                .map(e -> node(e.getKey(), e.getValue())).toList(), controllerNode);
    }

    private static PluginStatus.NodeInstance node(String nodeId, boolean healthy) {
        return new PluginStatus.NodeInstance(nodeId, "ext-" + nodeId, null, Map.of(), healthy, null, Instant.now());
    }

    private static PluginStatus status(String plugin, List<PluginStatus.NodeInstance> nodes, String controllerNode) {
        List<PluginStatus.ControllerInstance> controllers = List.of(
                new PluginStatus.ControllerInstance(controllerNode, true, null, Instant.now()));
        long healthy = nodes.stream().filter(n -> Boolean.TRUE.equals(n.healthy())).count();
        return new PluginStatus(plugin, "test.csi", "1.0", true, 1, 1, (int) healthy, nodes.size(), controllers, nodes,
                Instant.now(), false, false);
    }
}
