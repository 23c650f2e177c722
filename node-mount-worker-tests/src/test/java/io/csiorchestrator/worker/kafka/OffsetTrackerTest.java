package io.csiorchestrator.worker.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class OffsetTrackerTest {

    @Test
    void commitsOnlyTheCompletedPrefix() {
        OffsetTracker t = new OffsetTracker();
        t.started(10);
        t.started(11);
        t.started(12);
        assertEquals(10, t.committable().getAsLong(), "nothing done yet: resume at 10");
        t.completed(12);
        t.completed(11);
        assertTrue(t.committable().isEmpty(), "10 is still running");
        t.completed(10);
        assertEquals(13, t.committable().getAsLong());
        assertTrue(t.committable().isEmpty(), "nothing new");
        assertEquals(0, t.inFlight());
    }

    @Test
    void aTrackerThatSawNoRecordHasNothingToCommit() {
        OffsetTracker t = new OffsetTracker();
        assertFalse(t.seenAny());
        assertTrue(t.committable().isEmpty(), "no record taken: the consumer's position is the offset to keep");
        t.started(0);
        assertTrue(t.seenAny());
    }
}
