package io.csiorchestrator.plugins.domain;

import java.time.Duration;

/** Short human text for a duration, as operators write it: 90s, 5m, 1h, 1500ms. */
public final class DurationText {

    private DurationText() {
    }

    public static String of(Duration duration) {
        long millis = duration.toMillis();
        if (millis % 1000 != 0) {
            return millis + "ms";
        }
        long seconds = millis / 1000;
        if (seconds != 0 && seconds % 3600 == 0) {
            return seconds / 3600 + "h";
        }
        if (seconds != 0 && seconds % 60 == 0) {
            return seconds / 60 + "m";
        }
        return seconds + "s";
    }
}
