package io.csiorchestrator.events.identity;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The replay rule: once per id, only inside the window, and a forgotten id is never accepted twice. */
class ReplayWindowTest {

    private static final Instant NOW = Instant.parse("2026-11-24T12:00:00Z");

    /** The same id twice inside the window: the second is replayed. */
    @Test
    void sameIdTwiceIsReplayed() {
        ReplayWindow window = new ReplayWindow(Duration.ofMinutes(5), 100);
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("a", NOW, NOW));
        assertEquals(ReplayWindow.Verdict.REPLAYED, window.admit("a", NOW, NOW.plusSeconds(10)));
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("b", NOW, NOW.plusSeconds(10)));
    }

    /** A ce_time older or newer than the window is outside it; the edges are inside. */
    @Test
    void timesBeyondTheWindowAreOutside() {
        ReplayWindow window = new ReplayWindow(Duration.ofMinutes(5), 100);
        assertEquals(ReplayWindow.Verdict.OUTSIDE_WINDOW, window.admit("old", NOW.minusSeconds(301), NOW));
        assertEquals(ReplayWindow.Verdict.OUTSIDE_WINDOW, window.admit("future", NOW.plusSeconds(301), NOW));
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("edge-old", NOW.minusSeconds(300), NOW));
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("edge-new", NOW.plusSeconds(300), NOW));
    }

    /** Past capacity the oldest id is forgotten, and a replay of it is refused as outside the window, not accepted. */
    @Test
    void forgottenIdIsRefusedNotAccepted() {
        ReplayWindow window = new ReplayWindow(Duration.ofMinutes(5), 2);
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("a", NOW.minusSeconds(3), NOW));
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("b", NOW.minusSeconds(2), NOW));
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("c", NOW.minusSeconds(1), NOW));
        assertEquals(2, window.remembered());
        assertEquals(ReplayWindow.Verdict.OUTSIDE_WINDOW, window.admit("a", NOW.minusSeconds(3), NOW));
        assertEquals(ReplayWindow.Verdict.REPLAYED, window.admit("c", NOW.minusSeconds(1), NOW));
    }

    /** Ids whose time left the window are dropped from memory. */
    @Test
    void memoryIsBoundedByTheWindow() {
        ReplayWindow window = new ReplayWindow(Duration.ofMinutes(5), 100);
        window.admit("a", NOW, NOW);
        window.admit("b", NOW, NOW);
        assertEquals(ReplayWindow.Verdict.FRESH, window.admit("c", NOW.plusSeconds(400), NOW.plusSeconds(400)));
        assertEquals(1, window.remembered());
    }
}
