package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ClaimRules.Accept;
import io.csiorchestrator.claims.domain.ClaimRules.HeldClaim;
import io.csiorchestrator.claims.domain.ClaimRules.NodeFacts;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ClaimRules.Reject;
import io.csiorchestrator.claims.domain.ClaimRules.Request;
import io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.MountSupport;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Issue 34 item 1: the node's volume limit at claim time, as a table of cases. */
class NodeLimitsTest {

    /** n1 takes 2 volumes of plugin p, n2 has no limit. */
    private static final PluginFacts PLUGIN = new PluginFacts("p", true, false, List.of(),
            Map.of("n1", new NodeFacts("n1", "ext-1", true, Map.of("zone", "a"), 2),
                    "n2", new NodeFacts("n2", "ext-2", true, Map.of("zone", "a"), 0)));

    private record Case(String name, String node, List<HeldClaim> volumeClaims, Long held, String rejectedFor) {
    }

    @Test
    void aClaimThatWouldPassTheNodesLimitIsRejectedNamingNodePluginLimitAndHeld() {
        List<Case> cases = List.of(
                new Case("below the limit", "n1", List.of(), 1L, null),
                new Case("at the limit", "n1", List.of(), 2L, "node n1 has reached its limit of volumes of plugin p:"
                        + " limit 2 (max_volumes_per_node), held 2 (claims in flight included)"),
                new Case("over the limit (it was lowered)", "n1", List.of(), 5L, "limit 2 (max_volumes_per_node), held 5"),
                new Case("the volume is on the node already: no volume added", "n1",
                        List.of(new HeldClaim("a0", "n1", ClaimMode.READ)), null, null),
                new Case("the volume on another node does not count as here", "n1",
                        List.of(new HeldClaim("a0", "n2", ClaimMode.READ)), 2L, "held 2"),
                new Case("no limit: never counted", "n2", List.of(), null, null));
        for (Case c : cases) {
            VolumeFacts volume = new VolumeFacts("ns", "vol", "p", AccessMode.MULTI_NODE_MULTI_WRITER,
                    AttachmentMode.FILE_SYSTEM, c.volumeClaims().isEmpty() ? null : AccessMode.MULTI_NODE_MULTI_WRITER,
                    Map.of(), false, c.volumeClaims());
            PluginFacts plugin = c.held() == null ? PLUGIN : PLUGIN.withVolumesHeld(c.node(), c.held());
            assertEquals(c.held() != null, NodeLimits.needsCount(volume, PLUGIN, c.node()), c.name());
            ClaimRules.Decision d = ClaimRules.decide(volume, plugin, new Request("a1", c.node(), ClaimMode.WRITE,
                    AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false));
            if (c.rejectedFor() == null) {
                assertInstanceOf(Accept.class, d, c.name());
            } else {
                Reject r = assertInstanceOf(Reject.class, d, c.name());
                assertEquals(NodeLimits.NODE_VOLUME_LIMIT, r.code(), c.name());
                assertTrue(r.reason().contains(c.rejectedFor()), c.name() + ": " + r.reason());
                assertTrue(r.reason().startsWith("volume ns/vol: write claim by allocation a1 on node n1"), r.reason());
            }
        }
    }

    @Test
    void aLimitedNodeWithoutItsCountIsTheCallersMistakeNotAnAcceptedClaim() {
        VolumeFacts volume = new VolumeFacts("ns", "vol", "p", AccessMode.MULTI_NODE_MULTI_WRITER,
                AttachmentMode.FILE_SYSTEM, null, Map.of(), false, List.of());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ClaimRules.decide(volume, PLUGIN,
                new Request("a1", "n1", ClaimMode.READ, AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                        MountSupport.ALL, false)));
        assertTrue(e.getMessage().contains("node n1") && e.getMessage().contains("limit of 2"), e.getMessage());
        assertFalse(NodeLimits.needsCount(volume, PLUGIN, "n9"), "an unknown node is rejected by the other rules");
    }
}
