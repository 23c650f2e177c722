package io.csiorchestrator.claims.capacity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CapacityFigures;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The view's rules alone: newest per plugin and segment, a listener told of changes only, a failing one contained. */
class CapacityViewTest {

    private static final Instant T = Instant.parse("2026-11-29T12:00:00Z");
    private static final Map<String, String> ZONE_A = Map.of("zone", "a", "rack", "1");

    @Test
    void theNewestFiguresPerPluginAndSegmentAreKeptAndOnlyChangesAreTold() {
        CapacityView view = new CapacityView();
        List<CapacityView.Entry> told = new ArrayList<>();
        view.onChange(e -> {
            throw new IllegalStateException("a broken listener");
        });
        view.onChange(told::add);

        assertTrue(view.receive("n1", "hp", new CapacityFigures(ZONE_A, 100, null, null), T), "new");
        assertFalse(view.receive("n2", "hp", new CapacityFigures(ZONE_A, 100, null, null), T.plusSeconds(1)),
                "same figures from another node: refreshed, not a change");
        assertEquals("n2", view.get("hp", Map.of("rack", "1", "zone", "a")).orElseThrow().nodeId(),
                "the segment's order does not matter");
        assertFalse(view.receive("n1", "hp", new CapacityFigures(ZONE_A, 5, null, null), T.minusSeconds(1)), "older");
        assertEquals(100, view.get("hp", ZONE_A).orElseThrow().availableBytes());
        assertTrue(view.receive("n1", "hp", new CapacityFigures(ZONE_A, 100, 50L, null), T.plusSeconds(2)),
                "a maximum volume size given now");
        assertTrue(view.receive("n1", "hp", new CapacityFigures(Map.of(), 7, null, null), T), "another segment");
        assertTrue(view.receive("n1", "other", new CapacityFigures(ZONE_A, 7, null, null), T), "another plugin");

        assertEquals(List.of(100L, 100L, 7L, 7L), told.stream().map(CapacityView.Entry::availableBytes).toList());
        assertEquals(2, view.of("hp").size());
        assertEquals(List.of("hp", "hp", "other"), view.all().stream().map(CapacityView.Entry::pluginId).toList());
    }
}
