package io.csiorchestrator.events.identity;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Replay protection for signed records (issue 20 item 5): a record is accepted once, and only while its
 * {@code ce_time} is within {@code window} of now (either side, for clock skew). The ids of accepted records are
 * remembered until their {@code ce_time} leaves the window, at most {@code capacity} of them: when more arrive, the
 * oldest is forgotten and the window's lower edge moves up to its time (so a forgotten id is refused as outside the
 * window, never accepted twice). Thread-safe; pure logic, the clock is passed in.
 */
public final class ReplayWindow {

    public enum Verdict {
        FRESH, REPLAYED, OUTSIDE_WINDOW
    }

    private record Seen(String id, Instant time) {
    }

    private final Duration window;
    private final int capacity;
    private final Map<String, Instant> seen = new HashMap<>();
    private final PriorityQueue<Seen> byTime = new PriorityQueue<>((a, b) -> a.time().compareTo(b.time()));
    private Instant floor = Instant.MIN;

    public ReplayWindow(Duration window, int capacity) {
        if (window.isNegative() || window.isZero() || capacity < 1) {
            throw new IllegalArgumentException("a replay window needs a positive duration and capacity");
        }
        this.window = window;
        this.capacity = capacity;
    }

    /** Judges a record and, when {@link Verdict#FRESH}, remembers its id (check and remember are one step). */
    public synchronized Verdict admit(String ceId, Instant ceTime, Instant now) {
        Instant lower = now.minus(window);
        while (!byTime.isEmpty() && byTime.peek().time().isBefore(lower)) {
            seen.remove(byTime.poll().id());
        }
        if (ceTime.isBefore(lower) || ceTime.isAfter(now.plus(window)) || !ceTime.isAfter(floor)) {
            return Verdict.OUTSIDE_WINDOW;
        }
        if (seen.containsKey(ceId)) {
            return Verdict.REPLAYED;
        }
        seen.put(ceId, ceTime);
        byTime.add(new Seen(ceId, ceTime));
        while (seen.size() > capacity) {
            Seen oldest = byTime.poll();
            seen.remove(oldest.id());
            if (oldest.time().isAfter(floor)) {
                floor = oldest.time();
            }
        }
        return Verdict.FRESH;
    }

    public synchronized int remembered() {
        return seen.size();
    }

    public Duration window() {
        return window;
    }
}
