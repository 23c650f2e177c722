package io.csiorchestrator.plugins.messaging;

import io.csiorchestrator.plugins.PluginRegistry;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.jboss.logging.Logger;

/**
 * The expiry sweep, every {@code csi.registry.sweep-interval} ({@link io.csiorchestrator.plugins.RegistryTimer}): instances silent for longer than
 * {@code csi.registry.instance-ttl} turn unhealthy, those silent for longer than
 * {@code csi.registry.plugin-gc-after} are removed, and a plugin left without instances is removed
 * (tombstone on {@code plugin-status}). A run still going when the next is due is not doubled.
 */
@ApplicationScoped
public class ExpirySweep {

    private static final Logger LOG = Logger.getLogger(ExpirySweep.class);

    @Inject
    PluginRegistry registry;

    /** One sweep; run by {@link io.csiorchestrator.plugins.RegistryTimer}. */
    public Uni<Void> sweep() {
        return registry.sweep()
                .invoke(changed -> {
                    if (changed > 0) {
                        LOG.debugf("expiry sweep changed %d plugin(s)", changed);
                    }
                })
                .onFailure().invoke(failure -> LOG.warn("expiry sweep failed; the next one tries again", failure))
                .onFailure().recoverWithNull()
                .replaceWithVoid();
    }
}
