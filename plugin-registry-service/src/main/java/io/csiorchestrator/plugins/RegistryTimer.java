package io.csiorchestrator.plugins;

import io.csiorchestrator.plugins.config.RegistryConfig;
import io.csiorchestrator.support.ServiceTimer;
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
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The registry's one timer thread ({@link ServiceTimer}), for its three jobs of {@code csi.registry.sweep-interval}
 * (15 s): the plugin-health catch-up probe ({@link RecordingWatch#probe}, blocking: Kafka offsets, so on this thread)
 * and the gauges' refresh ({@link PluginGauges#refresh}), both from a second after the start, and the expiry sweep
 * ({@link ExpirySweep#sweep}) from one interval after it. Each job is a timer set for its next moment, one interval
 * after its previous run ended, so a run still going when the next is due is not doubled.
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

    private final ServiceTimer timer = new ServiceTimer("csi-registry-timer");
    private final AtomicBoolean sweeping = new AtomicBoolean();
    private final AtomicBoolean refreshing = new AtomicBoolean();

    void onStart(@Observes StartupEvent event) {
        Duration every = config.sweepInterval();
        // the probe and the refresh a second after the start, as quarkus-scheduler's first trigger check ran them
        Duration first = every.compareTo(Duration.ofSeconds(1)) < 0 ? every : Duration.ofSeconds(1);
        timer.every("the plugin-health catch-up probe", first, every, watch::probe);
        timer.every("the plugin gauges' refresh", first, every, () -> nonBlocking(refreshing, gauges::refresh, "the plugin gauges' refresh"));
        timer.every("the expiry sweep", every, every, () -> nonBlocking(sweeping, expiry::sweep, "the expiry sweep"));
    }

    void onStop(@Observes ShutdownEvent event) {
        timer.close();
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
