package io.csiorchestrator.support;

import io.quarkus.runtime.configuration.DurationConverter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * A service's one timer thread, for work that falls due at a moment (issue 36 item 4, nothing busy while idle): each
 * job is a timer set for its own next moment and the thread sleeps until one falls due. It replaces quarkus-scheduler,
 * whose trigger check woke every second, idle or not, to find out whether a job was due. claim-service
 * ({@code ClaimTimer}) and the registry ({@code RegistryTimer}) each run one.
 */
public class ServiceTimer implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(ServiceTimer.class);

    private final ScheduledExecutorService timer;

    /** A timer whose thread (a daemon, started at the first job) is named {@code threadName}. */
    public ServiceTimer(String threadName) {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
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

    /** Stops the thread; jobs not yet run are dropped. */
    @Override
    public void close() {
        timer.shutdownNow();
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
