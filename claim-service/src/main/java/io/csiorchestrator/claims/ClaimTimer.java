package io.csiorchestrator.claims;

import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.configuration.DurationConverter;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * claim-service's one timer thread, for the work that falls due at a moment: the reconcile schedule's due times
 * ({@link ReconcileSchedule}), the outbox's safety sweep and the volume listing's interval. It replaces
 * quarkus-scheduler (issue 36 item 4, nothing busy while idle): that scheduler's trigger check woke every second,
 * idle or not, to find out whether either of this service's two interval jobs (a sweep every 30 s, a listing every
 * 5 min) was due. Here each job is a timer set for its own next moment, and the thread sleeps until one falls due.
 */
@ApplicationScoped
public class ClaimTimer {

    private static final Logger LOG = Logger.getLogger(ClaimTimer.class);

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "csi-claims-timer");
        t.setDaemon(true);
        return t;
    });

    void onStop(@Observes ShutdownEvent event) {
        timer.shutdownNow();
    }

    /** {@code work} once, after {@code delay}. */
    public ScheduledFuture<?> once(Runnable work, Duration delay) {
        return timer.schedule(work, Math.max(0, delay.toMillis()), TimeUnit.MILLISECONDS);
    }

    /**
     * {@code work} after {@code first}, then {@code period} after each run ended (never two at once); a run that
     * throws is logged and the next one is still due (a thrown exception would end a plain executor's repetition).
     */
    public ScheduledFuture<?> every(String what, Duration first, Duration period, Runnable work) {
        return timer.scheduleWithFixedDelay(() -> {
            try {
                work.run();
            } catch (RuntimeException e) {
                LOG.warnf("%s failed (due again in %s): %s", what, period, e.toString());
            }
        }, first.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** An interval setting: {@code off} or {@code disabled} (any case) is null, anything else a duration ("5m", "PT5M"). */
    public static Duration interval(String value) {
        String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        if (v.equals("off") || v.equals("disabled")) {
            return null;
        }
        Duration d = DurationConverter.parseDuration(value.trim());
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException("an interval must be positive, or off: '" + value + "'");
        }
        return d;
    }
}
