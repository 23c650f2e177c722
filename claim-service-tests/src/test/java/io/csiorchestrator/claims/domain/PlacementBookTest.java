package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.Placement;
import io.csiorchestrator.events.PluginStatus;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Issue 34 item 4: a placement entry is written once per change, never again for the same news. */
class PlacementBookTest {

    private static final Instant T0 = Instant.parse("2026-11-29T12:00:00Z");

    private static PluginStatus status(long maxOnN1, boolean n2Healthy) {
        return new PluginStatus("p", "hostpath", "1", false, 0, 0, 2, 2, List.of(), List.of(
                new PluginStatus.NodeInstance("n1", "ext-1", maxOnN1, Map.of("zone", "a"), true, null, T0),
                new PluginStatus.NodeInstance("n2", "ext-2", null, Map.of("zone", "b"), n2Healthy, null, T0)), T0);
    }

    @Test
    void eachChangeIsWrittenOnceAndTheSameNewsNever() {
        PlacementBook book = new PlacementBook();
        List<Placement> first = PlacementBook.nodeEntries("p", status(2, true), Map.of("n1", 1L), T0);
        assertEquals(List.of(Placement.node("p", "n1", Map.of("zone", "a"), 2, 1, true, T0),
                Placement.node("p", "n2", Map.of("zone", "b"), 0, 0, true, T0)), first);
        assertEquals(first, book.changed(first), "everything, the first time");

        // the same news later: nothing, whatever the time
        assertTrue(book.changed(PlacementBook.nodeEntries("p", status(2, true), Map.of("n1", 1L), T0.plusSeconds(60)))
                .isEmpty());

        // n1 holds one more volume: only n1's entry; n2 unhealthy: only n2's; the limit changes: only n1's
        List<Placement> held = book.changed(PlacementBook.nodeEntries("p", status(2, true), Map.of("n1", 2L), T0));
        assertEquals(List.of("node/p/n1"), held.stream().map(Placement::recordKey).toList());
        assertEquals(2L, held.get(0).volumesHeld());
        assertEquals(List.of("node/p/n2"), book.changed(PlacementBook.nodeEntries("p", status(2, false), Map.of("n1", 2L), T0))
                .stream().map(Placement::recordKey).toList());
        List<Placement> limit = book.changed(PlacementBook.nodeEntries("p", status(3, false), Map.of("n1", 2L), T0));
        assertEquals(3L, limit.get(0).maxVolumes());
        assertEquals(1, limit.size());

        // a write that did not commit is written again by the next pass
        book.unwritten(limit);
        assertEquals(limit, book.changed(limit));
    }

    @Test
    void capacityEntriesAreKeyedPerPluginAndSegment() {
        PlacementBook book = new PlacementBook();
        Placement a = Placement.capacity("p", Map.of("zone", "a"), 100, null, null, T0, T0);
        Placement b = Placement.capacity("p", Map.of("zone", "b"), 100, null, null, T0, T0);
        assertEquals(List.of(a, b), book.changed(List.of(a, b)));
        Placement aLess = Placement.capacity("p", Map.of("zone", "a"), 50, null, null, T0.plusSeconds(5), T0.plusSeconds(5));
        assertEquals(List.of(aLess), book.changed(List.of(aLess, b)));
        assertEquals(2, book.written().size());
        assertTrue(PlacementBook.nodeEntries("p", null, Map.of(), T0).isEmpty(), "a removed plugin has no node entries");
    }
}
