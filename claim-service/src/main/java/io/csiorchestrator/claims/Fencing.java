package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.FenceTimers;
import io.csiorchestrator.claims.domain.LeaseBook;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.interceptor.Interceptor;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * This replica's view of the node leases ({@link LeaseBook}, fed by {@code node-leases} in every replica) and the
 * checked fencing timers. Created at start with every lease "just granted"; a failover-wait below the floor stops
 * the start with the reason.
 */
@ApplicationScoped
public class Fencing {

    private static final Logger LOG = Logger.getLogger(Fencing.class);

    @Inject
    FencingSettings settings;

    private final LeaseBook book = new LeaseBook(System.nanoTime());
    private volatile FenceTimers timers;

    void onStart(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE + 5) StartupEvent event) {
        FenceTimers t;
        try {
            t = settings.timers();
        } catch (IllegalArgumentException e) {
            LOG.errorf("refusing to start: %s", e.getMessage());
            throw new IllegalStateException("refusing to start: " + e.getMessage(), e);
        }
        timers = t;
        LOG.infof("fencing: a lapsed node's claims are assumed detached %s after its last valid lease (floor %s)"
                        + " and %s after its lapse; storage-fencing plugins %s", FenceTimers.text(t.effectiveFailoverWait()),
                FenceTimers.text(t.floor()), FenceTimers.text(t.afterLapse()), storageFencingPlugins());
    }

    public LeaseBook book() {
        return book;
    }

    public FenceTimers timers() {
        FenceTimers t = timers;
        return t != null ? t : settings.timers();
    }

    public List<String> storageFencingPlugins() {
        return settings.storageFencingPlugins().orElse(List.of());
    }

    public long now() {
        return System.nanoTime();
    }
}
