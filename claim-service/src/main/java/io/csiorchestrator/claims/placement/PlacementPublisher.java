package io.csiorchestrator.claims.placement;

import io.csiorchestrator.claims.capacity.CapacityView;
import io.csiorchestrator.claims.domain.PlacementBook;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.Placement;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Writes the {@code placement} topic (issue 34 item 4), claim-service being its only writer: the node entries of a
 * plugin when its status changes (plugin-status: topology, limit, health) or a claim on it begins or ends (volumes
 * held), and the capacity entries the capacity feed hands to {@link #capacityObserved}. Changes are coalesced: the
 * first one arms a pass {@code csi.claims.placement-coalesce} later, and every change until then is in that pass;
 * a pass reads the plugins' statuses and one grouped count of the volumes held, and writes through the outbox (in one
 * transaction, published after commit like every other event of claim-service) only the entries that differ from the
 * ones last written ({@link PlacementBook}); a pass with nothing changed writes nothing and opens no transaction.
 * Nothing runs while nothing changes. The counts are read from the database, not kept in memory from the claims this
 * instance decided: another claim-service instance decides claims on the same nodes, and only the table has them all.
 */
@ApplicationScoped
public class PlacementPublisher {

    private static final Logger LOG = Logger.getLogger(PlacementPublisher.class);
    /** A failed pass (the database away, the outbox not written) is tried again this much later. */
    static final Duration RETRY_DELAY = Duration.ofSeconds(5);

    /** The plugins whose node entries the next pass computes (the whole set at start). */
    private final Set<String> dirtyPlugins = ConcurrentHashMap.newKeySet();
    /** Capacity entries handed in since the last pass, by key (the newest per key). */
    private final Map<String, Placement> capacities = new ConcurrentHashMap<>();
    private final PlacementBook book = new PlacementBook();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "csi-placement");
        t.setDaemon(true);
        return t;
    });
    private boolean armed;
    private boolean running;
    private boolean again;
    private boolean everything = true;

    @Inject
    Outbox outbox;
    @Inject
    CapacityView capacityView;
    @Inject
    Transactions transactions;

    /**
     * How long after a change the pass runs: every change within it is written by one pass, and an entry is written
     * at most once per pass (a burst of claims on one node is one update of its count, not one per claim). Short, as
     * a scheduler placing meanwhile may read a count that is behind by the claims of this moment.
     */
    @ConfigProperty(name = "csi.claims.placement-coalesce", defaultValue = "500ms")
    Duration coalesce;

    void onStart(@Observes StartupEvent event) {
        // the capacity feed (issue 34 item 2): every changed GetCapacity figure becomes a capacity entry
        capacityView.onChange(e -> capacityObserved(e.pluginId(), e.segment(), e.availableBytes(),
                e.maximumVolumeBytes(), e.minimumVolumeBytes(), e.observedAt()));
        arm(); // the whole view once: a new instance (or a new topic) starts from what the database says
    }

    void onStop(@Observes ShutdownEvent event) {
        timer.shutdownNow();
    }

    /** The node entries of {@code pluginId} may have changed: its status, or a claim on one of its nodes began or ended. */
    public void nodesChanged(String pluginId) {
        dirtyPlugins.add(pluginId);
        arm();
    }

    /**
     * The capacity feed's hook (issue 34 item 2): GetCapacity of {@code pluginId} in {@code segment} answered
     * {@code availableCapacity} (and the volume sizes, null when not given) at {@code observedAt}. Written with the
     * next pass when it differs from the entry last written for that plugin and segment.
     */
    public void capacityObserved(String pluginId, Map<String, String> segment, long availableCapacity,
                                 Long maximumVolumeSize, Long minimumVolumeSize, Instant observedAt) {
        Placement entry = Placement.capacity(pluginId, segment, availableCapacity, maximumVolumeSize, minimumVolumeSize,
                observedAt, Instant.now());
        capacities.put(entry.recordKey(), entry);
        arm();
    }

    /**
     * The entries this instance last wrote, sorted by key (node entries, then capacity entries), each without its time
     * of writing: what a scheduler reading the topic has now, for {@code ./csi node status} and the status page.
     */
    public List<Placement> entries() {
        synchronized (book) {
            return book.written().entrySet().stream().sorted(Map.Entry.comparingByKey())
                    .sorted(java.util.Comparator.comparing(e -> e.getValue().kind() == io.csiorchestrator.events.PlacementKind.NODE ? 0 : 1))
                    .map(Map.Entry::getValue).toList();
        }
    }

    private void arm() {
        arm(coalesce);
    }

    private synchronized void arm(Duration delay) {
        if (running) {
            again = true;
            return;
        }
        if (armed) {
            return;
        }
        armed = true;
        try {
            timer.schedule(this::fire, delay.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            armed = false; // shutting down
        }
    }

    private void fire() {
        boolean all;
        List<String> pluginIds;
        Map<String, Placement> capacity;
        synchronized (this) {
            armed = false;
            running = true;
            all = everything;
            everything = false;
            pluginIds = new ArrayList<>(dirtyPlugins);
            dirtyPlugins.removeAll(pluginIds);
            capacity = new LinkedHashMap<>(capacities);
            capacity.keySet().forEach(capacities::remove);
        }
        VertxContextSupport.subscribe(() -> pass(all, pluginIds, capacity).toMulti(), s -> s.with(
                written -> { },
                failure -> {
                    LOG.warnf("placement pass failed (tried again): %s", failure.toString());
                    synchronized (this) {
                        everything |= all;
                        dirtyPlugins.addAll(pluginIds);
                        capacity.forEach(capacities::putIfAbsent);
                    }
                    finished(true);
                },
                () -> finished(false)));
    }

    private void finished(boolean retry) {
        boolean rearm;
        synchronized (this) {
            running = false;
            rearm = again || retry;
            again = false;
        }
        if (rearm) {
            // after a failure (the database away) not before RETRY_DELAY: a pass per coalesce period would only fail again
            arm(retry && RETRY_DELAY.compareTo(coalesce) > 0 ? RETRY_DELAY : coalesce);
        }
    }

    /**
     * One pass: the statuses and held counts of the dirty plugins (all at start), read in a session without a
     * transaction (two selects, each its own snapshot as before under READ COMMITTED), then a transaction only when
     * an entry changed, writing the outbox rows of those entries: a pass whose counts came back as written (a claim
     * and a release on a node within one coalesce window) costs no BEGIN and COMMIT and no write.
     */
    private Uni<Integer> pass(boolean all, List<String> pluginIds, Map<String, Placement> capacity) {
        return transactions.reading(() -> (all ? allPluginIds() : Uni.createFrom().item(pluginIds))
                .chain(ids -> heldCounts(ids).chain(held -> statuses(ids).map(statuses -> {
                    Instant now = Instant.now();
                    List<Placement> current = new ArrayList<>();
                    for (String id : ids) {
                        current.addAll(PlacementBook.nodeEntries(id, statuses.get(id),
                                held.getOrDefault(id, Map.of()), now));
                    }
                    current.addAll(capacity.values());
                    synchronized (book) {
                        return book.changed(current);
                    }
                }))))
                .chain(changed -> changed.isEmpty() ? Uni.createFrom().item(0) : write(changed))
                .invoke(n -> {
                    if (n > 0) {
                        LOG.debugf("placement: %d entries written", n);
                    }
                });
    }

    /** The outbox rows of {@code changed}, in one transaction; the book forgets them when it fails. */
    private Uni<Integer> write(List<Placement> changed) {
        return outbox.inTransaction(() -> {
            Uni<Void> chain = Uni.createFrom().voidItem();
            for (Placement p : changed) {
                chain = chain.chain(() -> outbox.add(p, null));
            }
            return chain;
        }).onFailure().invoke(() -> {
            synchronized (book) {
                book.unwritten(changed);
            }
        }).replaceWith(changed.size());
    }

    private static Uni<List<String>> allPluginIds() {
        return SessionSql.strings("SELECT plugin_id FROM plugins");
    }

    /**
     * The statuses of {@code ids} as plugin-status last carried them (a plugin without a row: absent), in one select.
     */
    private static Uni<Map<String, PluginStatus>> statuses(List<String> ids) {
        if (ids.isEmpty()) {
            return Uni.createFrom().item(Map.of());
        }
        return SessionSql.select("SELECT plugin_id, status_json FROM plugins WHERE plugin_id = ANY(CAST($1 AS varchar[]))",
                        (Object) ids.toArray(String[]::new))
                .map(rows -> {
                    Map<String, PluginStatus> out = new HashMap<>();
                    for (Object[] r : rows) {
                        out.put((String) r[0], EventCodec.decode(PluginStatus.class, (String) r[1]));
                    }
                    return out;
                });
    }

    /** By plugin, then node: the volumes held (current claims, in flight included), one grouped count. */
    static Uni<Map<String, Map<String, Long>>> heldCounts(List<String> pluginIds) {
        if (pluginIds.isEmpty()) {
            return Uni.createFrom().item(Map.of());
        }
        return SessionSql.select("SELECT v.plugin_id, c.node_id, count(DISTINCT c.volume_key)"
                        + " FROM claims c JOIN volumes v ON v.volume_key = c.volume_key WHERE NOT c.past"
                        + " AND v.plugin_id = ANY(CAST($1 AS varchar[])) GROUP BY v.plugin_id, c.node_id",
                        (Object) pluginIds.toArray(String[]::new))
                .map(rows -> {
                    Map<String, Map<String, Long>> out = new HashMap<>();
                    for (Object[] r : rows) {
                        out.computeIfAbsent((String) r[0], k -> new HashMap<>()).put((String) r[1], ((Number) r[2]).longValue());
                    }
                    return out;
                });
    }
}
