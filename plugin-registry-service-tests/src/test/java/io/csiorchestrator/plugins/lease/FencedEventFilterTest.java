package io.csiorchestrator.plugins.lease;

import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lease authority decodes only the node events that may be FENCED (issue 36). */
class FencedEventFilterTest {

    @Test
    void onlyAFencedEventIsDecoded() {
        for (NodeEventKind kind : NodeEventKind.values()) {
            String json = EventCodec.encodeToString(event(kind));
            if (kind == NodeEventKind.FENCED) {
                assertTrue(LeaseAuthority.mayBeFenced(json), json);
            } else {
                assertFalse(LeaseAuthority.mayBeFenced(json), kind + ": " + json);
            }
        }
    }

    /** An event of {@code kind} whose other text fields say "fenced" too: only the kind counts. */
    private static NodeEvent event(NodeEventKind kind) {
        return new NodeEvent("node-1", null, kind, "volume fenced on node-1", "hostpath", "default", "fenced",
                "alloc-1", true, null, Map.of("epoch", "3", "reason", "fenced"), Instant.parse("2026-12-01T10:00:00Z"), 3L);
    }
}
