package io.csiorchestrator.plugins.metrics;

import io.csiorchestrator.plugins.domain.RecordingWindow;
import io.csiorchestrator.plugins.messaging.RecordingWatch;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Clock;
import java.time.Duration;

/**
 * Whether the expiry sweep counts silence now, read from {@link RecordingWatch} at scrape time:
 * {@value #COUNTING} is 1 while the registry has caught up with {@code plugin-health} since its start or last
 * outage (0 while not: nothing expires), {@value #RECORDED_LAG} how far the end of the recorded time trails
 * the clock (NaN while not counting).
 */
@ApplicationScoped
@Startup
public class ExpiryGauges {

    public static final String COUNTING = "csi.plugin.expiry.counting";
    public static final String RECORDED_LAG = "csi.plugin.expiry.recorded.lag";

    @Inject
    public ExpiryGauges(MeterRegistry registry, RecordingWatch watch, Clock clock) {
        Gauge.builder(COUNTING, watch, w -> w.window().recording() ? 1 : 0)
                .description("1 while the registry counts plugin instances' silence (caught up with plugin-health"
                        + " since its start or last outage), 0 while not")
                .register(registry);
        Gauge.builder(RECORDED_LAG, watch, w -> lagSeconds(w.window(), clock))
                .description("how far behind the clock the registry is known to have recorded every plugin-health"
                        + " report; NaN while it does not count silence")
                .baseUnit("seconds")
                .register(registry);
    }

    private static double lagSeconds(RecordingWindow window, Clock clock) {
        if (!window.recording()) {
            return Double.NaN;
        }
        return Duration.between(window.upTo(), clock.instant()).toMillis() / 1000.0;
    }
}
