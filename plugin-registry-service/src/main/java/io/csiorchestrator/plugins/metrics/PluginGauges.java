package io.csiorchestrator.plugins.metrics;

import io.csiorchestrator.plugins.store.PluginRow;
import io.csiorchestrator.plugins.store.PluginStore;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToDoubleFunction;
import org.jboss.logging.Logger;

/**
 * Gauges of each plugin's healthy and expected nodes and controllers: {@code csi.plugin.nodes} and
 * {@code csi.plugin.controllers}, tags {@code plugin} (the plugin id: few of them) and {@code state}
 * = {@code healthy} / {@code expected}.
 *
 * <p>A scrape reads a cache, never the database. The cache takes a plugin's committed counts each time
 * this instance publishes its status (every change it made), and all plugins from one cheap query
 * (one row per plugin) every {@code csi.registry.sweep-interval}, which brings in changes made by other
 * instances of the service. A stored status version keeps an older read from overwriting a newer one;
 * a removed plugin's gauges are removed.
 */
@ApplicationScoped
public class PluginGauges {

    public static final String NODES = "csi.plugin.nodes";
    public static final String CONTROLLERS = "csi.plugin.controllers";

    private static final Logger LOG = Logger.getLogger(PluginGauges.class);

    /** One plugin's counts as of status version {@code version}. */
    public record Counts(long version, int controllersHealthy, int controllersExpected, int nodesHealthy,
                         int nodesExpected) {
        public static Counts of(PluginRow row) {
            return new Counts(row.statusVersion, row.controllersHealthy, row.controllersExpected, row.nodesHealthy,
                    row.nodesExpected);
        }
    }

    private record Entry(AtomicReference<Counts> counts, List<Meter> meters) {
    }

    private final MeterRegistry registry;
    private final Map<String, Entry> plugins = new HashMap<>();
    /** Per plugin, the refresh generation when it was last updated or removed by a publication. */
    private final Map<String, Long> touched = new HashMap<>();
    private long generation;

    @Inject
    Pool pool;
    @Inject
    PluginStore store;

    @Inject
    public PluginGauges(MeterRegistry registry) {
        this.registry = registry;
    }

    /** Takes a plugin's committed counts (ignored when older than the ones held). */
    public synchronized void update(String pluginId, Counts counts) {
        touched.put(pluginId, generation);
        take(pluginId, counts);
    }

    /** The plugin is gone: its gauges go too. */
    public synchronized void remove(String pluginId) {
        touched.put(pluginId, generation);
        Entry entry = plugins.remove(pluginId);
        if (entry != null) {
            entry.meters().forEach(registry::remove);
        }
    }

    /** The current counts of a plugin, if it has gauges. */
    public synchronized Counts counts(String pluginId) {
        Entry entry = plugins.get(pluginId);
        return entry == null ? null : entry.counts().get();
    }

    /** Starts a refresh: returns its generation, to pass to {@link #replaceAll} with what was read after this. */
    public synchronized long startRefresh() {
        return ++generation;
    }

    /**
     * Takes every plugin read by the refresh of generation {@code refresh}. Plugins absent from it lose
     * their gauges, unless a publication touched them since the refresh started (its read may be older).
     */
    public synchronized void replaceAll(long refresh, Map<String, Counts> current) {
        current.forEach((pluginId, counts) -> {
            // A publication since the refresh started knows better (the plugin may even be gone).
            if (touched.getOrDefault(pluginId, Long.MIN_VALUE) < refresh) {
                take(pluginId, counts);
            }
        });
        Set<String> gone = new HashSet<>(plugins.keySet());
        gone.removeAll(current.keySet());
        for (String pluginId : gone) {
            if (touched.getOrDefault(pluginId, Long.MIN_VALUE) < refresh) {
                plugins.remove(pluginId).meters().forEach(registry::remove);
            }
        }
        touched.values().removeIf(at -> at < refresh);
    }

    private void take(String pluginId, Counts counts) {
        Entry entry = plugins.get(pluginId);
        if (entry == null) {
            AtomicReference<Counts> ref = new AtomicReference<>(counts);
            List<Meter> meters = new ArrayList<>(4);
            meters.add(gauge(NODES, pluginId, "healthy", ref, c -> c.get().nodesHealthy()));
            meters.add(gauge(NODES, pluginId, "expected", ref, c -> c.get().nodesExpected()));
            meters.add(gauge(CONTROLLERS, pluginId, "healthy", ref, c -> c.get().controllersHealthy()));
            meters.add(gauge(CONTROLLERS, pluginId, "expected", ref, c -> c.get().controllersExpected()));
            plugins.put(pluginId, new Entry(ref, meters));
            return;
        }
        entry.counts().getAndUpdate(held -> counts.version() >= held.version() ? counts : held);
    }

    private Meter gauge(String name, String pluginId, String state, AtomicReference<Counts> ref,
                        ToDoubleFunction<AtomicReference<Counts>> value) {
        return Gauge.builder(name, ref, value)
                .tag("plugin", pluginId)
                .tag("state", state)
                .description(NODES.equals(name) ? "a plugin's node instances (monoliths included), healthy or expected"
                        : "a plugin's controller instances (monoliths included), healthy or expected")
                .strongReference(true)
                .register(registry);
    }

    /** Reads every plugin's counts (one row per plugin) into the cache. */
    public Uni<Void> refresh() {
        long refresh = startRefresh();
        return store.all(pool)
                .invoke(rows -> replaceAll(refresh, byId(rows)))
                .onFailure().invoke(failure -> LOG.debugf("plugin gauges not refreshed: %s", failure.toString()))
                .onFailure().recoverWithNull()
                .replaceWithVoid();
    }

    private static Map<String, Counts> byId(Collection<PluginRow> rows) {
        Map<String, Counts> byId = new HashMap<>();
        rows.forEach(row -> byId.put(row.id, Counts.of(row)));
        return byId;
    }
}
