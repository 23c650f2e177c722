package io.csiorchestrator.claims.capacity;

import io.csiorchestrator.events.CapacityFigures;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jboss.logging.Logger;

/**
 * The newest capacity of each plugin in each topology segment (issue 34 item 2), as the workers hosting the plugins'
 * controllers report it on node-events ({@code capacity}, CSI GetCapacity), in memory: this replica's view, from the
 * node-events partitions it reads (each node's events are in one partition, so one replica at a time holds a node's
 * reports; a restarted replica learns them again within the workers' capacity period, 5 min). The one place to ask:
 * {@link #all()}, {@link #of(String)}, {@link #get(String, Map)}, and {@link #onChange} for a listener (a placement
 * publisher) told of every entry that changed.
 */
@ApplicationScoped
public class CapacityView {

    private static final Logger LOG = Logger.getLogger(CapacityView.class);

    /**
     * A plugin's capacity in one segment.
     *
     * @param segment    the topology segment (empty: reachable from every node)
     * @param nodeId     the node whose worker reported it last
     * @param observedAt when that worker asked the plugin
     */
    public record Entry(String pluginId, Map<String, String> segment, long availableBytes, Long maximumVolumeBytes,
                        Long minimumVolumeBytes, String nodeId, Instant observedAt) {
        public Entry {
            segment = java.util.Collections.unmodifiableMap(new TreeMap<>(segment));
        }
    }

    /** Told of every entry that changed (new figures, or new to this replica); called on the receiving thread. */
    @FunctionalInterface
    public interface Listener {
        void changed(Entry entry);
    }

    private record Key(String pluginId, Map<String, String> segment) {
    }

    private final Map<Key, Entry> entries = new ConcurrentHashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();

    /** Adds a listener for changed entries. */
    public void onChange(Listener listener) {
        listeners.add(listener);
    }

    /**
     * Takes in a report; an older one than the entry held (by {@code observedAt}) changes nothing. Returns whether the
     * figures changed (the same figures again only refresh the node and time, and tell no listener).
     */
    public boolean receive(String nodeId, String pluginId, CapacityFigures figures, Instant observedAt) {
        Entry next = new Entry(pluginId, figures.segment(), figures.availableBytes(), figures.maximumVolumeBytes(),
                figures.minimumVolumeBytes(), nodeId, observedAt);
        Key key = new Key(pluginId, next.segment());
        boolean[] changed = {false};
        entries.compute(key, (k, held) -> {
            if (held != null && held.observedAt().isAfter(observedAt)) {
                return held;
            }
            changed[0] = held == null || held.availableBytes() != next.availableBytes()
                    || !java.util.Objects.equals(held.maximumVolumeBytes(), next.maximumVolumeBytes())
                    || !java.util.Objects.equals(held.minimumVolumeBytes(), next.minimumVolumeBytes());
            return next;
        });
        if (changed[0]) {
            for (Listener listener : listeners) {
                try {
                    listener.changed(next);
                } catch (RuntimeException e) {
                    LOG.warnf(e, "a capacity listener failed on %s %s", pluginId, next.segment());
                }
            }
        }
        return changed[0];
    }

    /** Every entry, by plugin, then segment. */
    public List<Entry> all() {
        return entries.values().stream().sorted(ORDER).toList();
    }

    /** A plugin's entries, by segment. */
    public List<Entry> of(String pluginId) {
        return entries.values().stream().filter(e -> e.pluginId().equals(pluginId)).sorted(ORDER).toList();
    }

    /** A plugin's capacity in one segment. */
    public Optional<Entry> get(String pluginId, Map<String, String> segment) {
        return Optional.ofNullable(entries.get(new Key(pluginId, new TreeMap<>(segment))));
    }

    private static final Comparator<Entry> ORDER = Comparator.comparing(Entry::pluginId)
            .thenComparing(e -> e.segment().toString());
}
