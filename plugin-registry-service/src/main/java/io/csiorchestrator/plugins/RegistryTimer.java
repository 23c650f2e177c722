package io.csiorchestrator.plugins;

import io.csiorchestrator.plugins.config.RegistryConfig;
import io.csiorchestrator.plugins.messaging.ExpirySweep;
import io.csiorchestrator.plugins.messaging.RecordingWatch;
import io.csiorchestrator.plugins.metrics.PluginGauges;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The registry's one timer thread, for its three jobs of {@code csi.registry.sweep-interval} (15 s): the plugin-health
 * catch-up probe ({@link RecordingWatch#probe}, blocking: Kafka offsets, so on this thread) and the gauges' refresh
 * ({@link PluginGauges#refresh}), both from a second after the start, and the expiry sweep ({@link ExpirySweep#sweep}) from one interval
 * after it. It replaces quarkus-scheduler (issue 36 item 4, nothing busy while idle): that scheduler's trigger check
 * woke every second, idle or not (20 wake-ups in 20 s, measured on an idle `up`), to find out whether a job was due.
 * Each job here is a timer set for its next moment, one interval after its previous run ended, so a run still going
 * when the next is due is not doubled.
 */
@ApplicationScoped
public class RegistryTimer {

    private static final Logger LOG = Logger.getLogger(RegistryTimer.class);

    @Inject
    RegistryConfig config;
    @Inject
    ExpirySweep expiry;
    @Inject
    PluginGauges gauges;
    @Inject
    RecordingWatch watch;

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "csi-registry-timer");
        t.setDaemon(true);
        return t;
    });
    private final AtomicBoolean sweeping = new AtomicBoolean();
    private final AtomicBoolean refreshing = new AtomicBoolean();

    void onStart(@Observes StartupEvent event) {
        long every = config.sweepInterval().toMillis();
        // the probe and the refresh a second after the start, as quarkus-scheduler's first trigger check ran them
        every("the plugin-health catch-up probe", Math.min(1000, every), every, watch::probe);
        every("the plugin gauges' refresh", Math.min(1000, every), every, () -> nonBlocking(refreshing, gauges::refresh, "the plugin gauges' refresh"));
        every("the expiry sweep", every, every, () -> nonBlocking(sweeping, expiry::sweep, "the expiry sweep"));
    }

    void onStop(@Observes ShutdownEvent event) {
        timer.shutdownNow();
    }

    private void every(String what, long firstMs, long everyMs, Runnable work) {
        timer.scheduleWithFixedDelay(() -> {
            try {
                work.run();
            } catch (RuntimeException e) {
                LOG.warnf("%s failed (due again in %d ms): %s", what, everyMs, e.toString());
            }
        }, firstMs, everyMs, TimeUnit.MILLISECONDS);
    }

    /** {@code work} on a Vert.x context (the reactive clients need one), unless its previous run has not ended. */
    private static void nonBlocking(AtomicBoolean running, Supplier<Uni<Void>> work, String what) {
        if (!running.compareAndSet(false, true)) {
            LOG.debugf("%s: the previous run has not ended; this one is skipped", what);
            return;
        }
        VertxContextSupport.subscribe(() -> work.get().toMulti(), s -> s.with(ignored -> { },
                failure -> {
                    running.set(false);
                    LOG.warnf("%s failed: %s", what, failure.toString());
                }, () -> running.set(false)));
    }
}
