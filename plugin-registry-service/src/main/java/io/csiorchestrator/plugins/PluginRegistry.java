package io.csiorchestrator.plugins;

import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.plugins.domain.HealthDecision;
import io.csiorchestrator.plugins.domain.InstanceRules;
import io.csiorchestrator.plugins.domain.PluginInstance;
import io.csiorchestrator.plugins.domain.PluginStatusCalculator;
import io.csiorchestrator.plugins.messaging.PluginStatusPublisher;
import io.csiorchestrator.plugins.messaging.RecordingWatch;
import io.csiorchestrator.plugins.metrics.RegistryMetrics;
import io.csiorchestrator.plugins.store.PluginInstanceRow;
import io.csiorchestrator.plugins.store.PluginRow;
import io.csiorchestrator.plugins.store.PluginStore;
import io.csiorchestrator.support.TransientFailures;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.jboss.logging.Logger;

/**
 * Applies health reports and the expiry sweep to the stored plugins, one plugin at a time under its
 * row lock, and publishes the plugin's status after the change has committed.
 *
 * <p>Each change runs: lock the plugin row, load its instances, decide with the pure
 * {@link InstanceRules}, recompute the status from the whole instance list with
 * {@link PluginStatusCalculator}, store, commit; then publish. A status is published when it
 * changed (heartbeats that change nothing but times are not published), and again when a report is
 * redelivered; that re-publication carries the same value. A publication that did not complete (the
 * broker unreachable, the service stopped after the commit) is repeated by the sweep, which finds
 * plugins whose status version is ahead of the published one.
 */
@ApplicationScoped
public class PluginRegistry {

    private static final Logger LOG = Logger.getLogger(PluginRegistry.class);
    /** A status not acknowledged this long after its change is published again by the sweep. */
    static final Duration PUBLICATION_GRACE = Duration.ofSeconds(5);

    @Inject
    Pool pool;
    @Inject
    PluginStore store;
    @Inject
    InstanceRules rules;
    @Inject
    PluginStatusPublisher publisher;
    @Inject
    Clock clock;
    @Inject
    RegistryMetrics metrics;
    @Inject
    RecordingWatch watch;

    /** What a report did. */
    public enum Outcome {
        /** The plugin's status changed and was published. */
        CHANGED,
        /** A newer report that changed nothing but times (a heartbeat): stored, not published. */
        HEARTBEAT,
        /** The same report again: nothing stored, the current status published again. */
        DUPLICATE,
        /** An older report: ignored. */
        STALE
    }

    /** Applies one valid {@code plugin-health} report. */
    public Uni<Outcome> record(PluginHealth report) {
        return record(report, null);
    }

    /**
     * Applies one valid {@code plugin-health} report produced at {@code eventTime} (null: unknown); the
     * time from then to the commit is recorded as {@value RegistryMetrics#REPORT_LATENCY}.
     */
    public Uni<Outcome> record(PluginHealth report, Instant eventTime) {
        return record(report, eventTime, null);
    }

    /**
     * As {@link #record(PluginHealth, Instant)}; the {@code plugin-status} record it publishes carries
     * the trace of {@code trace} (the {@code plugin-health} record's; null: the current context).
     */
    public Uni<Outcome> record(PluginHealth report, Instant eventTime, io.opentelemetry.context.Context trace) {
        return pool.withTransaction(tx -> apply(tx, report, 0))
                .onFailure(TransientFailures::isTransient).invoke(failure -> watch.interrupted(
                        "could not record a report, the database is away: " + failure))
                .invoke(outcome -> metrics.committed(outcome, eventTime))
                .call(outcome -> outcome == Outcome.CHANGED || outcome == Outcome.DUPLICATE
                        ? publisher.publishCurrent(report.pluginId(), trace)
                        : Uni.createFrom().voidItem());
    }

    private Uni<Outcome> apply(SqlClient tx, PluginHealth report, int attempt) {
        Instant now = PluginInstance.toStoredPrecision(clock.instant());
        return store.lockOrCreate(tx, report.pluginId(), now).chain(plugin -> {
            if (plugin == null) {
                // A sweep removed the plugin between our insert and our lock: insert it again.
                if (attempt >= 3) {
                    return Uni.createFrom().failure(new IllegalStateException(
                            "plugin " + report.pluginId() + " kept disappearing while recording a report"));
                }
                return apply(tx, report, attempt + 1);
            }
            return store.instances(tx, report.pluginId()).chain(rows -> applyLocked(tx, plugin, rows, report, now));
        });
    }

    private Uni<Outcome> applyLocked(SqlClient tx, PluginRow plugin, List<PluginInstanceRow> rows,
                                     PluginHealth report, Instant now) {
        List<PluginInstance> before = rows.stream().map(PluginInstanceRow::toInstance).toList();
        if (plugin.removed) {
            // Removed, tombstone maybe not yet published: registered afresh by this report.
            plugin.revive();
        }
        PluginInstanceRow storedRow = rows.stream().filter(r -> r.nodeId.equals(report.nodeId())).findFirst().orElse(null);
        PluginInstance stored = storedRow == null ? null : storedRow.toInstance();
        HealthDecision decision = rules.decide(stored, report, now);
        if (decision instanceof HealthDecision.Duplicate) {
            LOG.debugf("duplicate report of plugin %s on node %s", report.pluginId(), report.nodeId());
            return store.save(tx, plugin).replaceWith(Outcome.DUPLICATE);
        }
        if (decision instanceof HealthDecision.Stale stale) {
            LOG.debugf("ignored report of plugin %s on node %s observed at %s: %s is stored", report.pluginId(),
                    report.nodeId(), report.observedAt(), stale.storedObservedAt());
            return store.save(tx, plugin).replaceWith(Outcome.STALE);
        }
        PluginInstance accepted = ((HealthDecision.Accepted) decision).instance();
        List<PluginInstance> after = new ArrayList<>(before);
        after.removeIf(i -> i.nodeId().equals(accepted.nodeId()));
        if (report.reportsDeregistered()) {
            return deregistered(tx, plugin, before, after, storedRow, report, now);
        }
        after.add(accepted);
        Outcome outcome = recompute(plugin, before, after, now) ? Outcome.CHANGED : Outcome.HEARTBEAT;
        PluginInstanceRow row = storedRow == null ? PluginInstanceRow.of(accepted) : storedRow;
        row.take(accepted);
        return store.save(tx, row).chain(() -> store.save(tx, plugin)).replaceWith(outcome);
    }

    /**
     * The worker removed its instance (its socket stayed unreachable past the worker's grace): the instance is
     * deleted at once, not kept unhealthy until the removal delay, and the counts follow; a plugin left without
     * instances is removed (tombstone). A redelivered or late deregistration of an instance not stored changes nothing.
     */
    private Uni<Outcome> deregistered(SqlClient tx, PluginRow plugin, List<PluginInstance> before,
                                      List<PluginInstance> after, PluginInstanceRow storedRow, PluginHealth report,
                                      Instant now) {
        if (after.isEmpty()) {
            LOG.infof("plugin %s: its instance on node %s was deregistered by the node's worker (%s); no instance left,"
                    + " plugin removed", report.pluginId(), report.nodeId(), report.healthDescription());
            plugin.takeStatus(PluginStatusCalculator.calculate(plugin.id, List.of(), now));
            plugin.markRemoved();
        } else if (storedRow != null) {
            LOG.infof("plugin %s: its instance on node %s was deregistered by the node's worker (%s)",
                    report.pluginId(), report.nodeId(), report.healthDescription());
            recompute(plugin, before, after, now);
        } else {
            return store.save(tx, plugin).replaceWith(Outcome.HEARTBEAT);
        }
        return store.save(tx, plugin).chain(() -> store.deleteInstances(tx, report.pluginId(), List.of(report.nodeId())))
                .replaceWith(Outcome.CHANGED);
    }

    /**
     * Recomputes the plugin's status from {@code after}; when it differs from the one of {@code before}
     * (times aside), stores it with {@code updatedAt = now}. Returns whether it changed.
     */
    private static boolean recompute(PluginRow plugin, List<PluginInstance> before, List<PluginInstance> after, Instant now) {
        PluginStatus old = PluginStatusCalculator.calculate(plugin.id, before, plugin.updatedAt);
        PluginStatus fresh = PluginStatusCalculator.calculate(plugin.id, after, now);
        if (!before.isEmpty() && PluginStatusCalculator.sameStatus(old, fresh)) {
            return false;
        }
        plugin.takeStatus(fresh);
        return true;
    }

    /**
     * Silences the instances not heard from within the TTL and removes those not heard from within
     * the removal delay (and plugins left without instances), publishing each changed plugin. Both are
     * measured on the time in which the registry could have recorded every report ({@link RecordingWatch}):
     * nothing expires while it has not caught up since its start or its last outage.
     *
     * @return how many plugins changed or were removed
     */
    public Uni<Integer> sweep() {
        Instant now = PluginInstance.toStoredPrecision(clock.instant());
        InstanceRules.Cutoffs cutoffs = rules.cutoffs(watch.window());
        Uni<List<String>> due = !cutoffs.any() ? Uni.createFrom().item(List.of())
                : store.pluginsDueForSweep(pool, orNever(cutoffs.silentIfReceivedBefore()),
                        orNever(cutoffs.removedIfReceivedBefore()));
        Uni<List<String>> unpublished = store.publicationPending(pool, now.minus(PUBLICATION_GRACE));
        return due.chain(dueIds -> unpublished.chain(pendingIds -> {
            if (!pendingIds.isEmpty()) {
                LOG.infof("publishing again the status of plugin(s) %s, not acknowledged before", pendingIds);
            }
            Set<String> pluginIds = new TreeSet<>(dueIds);
            pluginIds.addAll(pendingIds);
            return Multi.createFrom().iterable(pluginIds)
                    .onItem().transformToUniAndConcatenate(pluginId -> sweepPlugin(pluginId, cutoffs, now)
                            .invoke(result -> {
                                if (result != null) {
                                    metrics.expired(result.silenced().size(), result.removed().size());
                                }
                            })
                            .map(result -> result != null)
                            .call(changed -> changed || pendingIds.contains(pluginId)
                                    ? publisher.publishCurrent(pluginId) : Uni.createFrom().voidItem())
                            .onFailure().recoverWithItem(failure -> {
                                LOG.warnf(failure, "sweep of plugin %s failed; the next sweep tries again", pluginId);
                                return false;
                            }))
                    .filter(Boolean::booleanValue)
                    .collect().asList()
                    .map(List::size);
        }));
    }

    /** A cutoff that no instance is received before: the epoch. */
    private static Instant orNever(Instant cutoff) {
        return cutoff == null ? Instant.EPOCH : cutoff;
    }

    /** Sweeps one plugin; after the commit, what changed, or null when nothing did. */
    private Uni<InstanceRules.SweepResult> sweepPlugin(String pluginId, InstanceRules.Cutoffs cutoffs, Instant now) {
        return pool.withTransaction(tx -> store.lock(tx, pluginId).chain(plugin -> {
            if (plugin == null) {
                return Uni.createFrom().nullItem();
            }
            return store.instances(tx, pluginId).chain(rows -> {
                List<PluginInstance> before = rows.stream().map(PluginInstanceRow::toInstance).toList();
                InstanceRules.SweepResult result = rules.sweep(before, cutoffs);
                if (!result.changed()) {
                    return Uni.createFrom().nullItem();
                }
                if (!result.silenced().isEmpty()) {
                    LOG.infof("plugin %s: no heartbeat within %s from node(s) %s", pluginId, rules.instanceTtl(), result.silenced());
                }
                if (!result.removed().isEmpty()) {
                    LOG.infof("plugin %s: removed the instance(s) on node(s) %s, silent for more than %s",
                            pluginId, result.removed(), rules.removeAfter());
                }
                if (result.pluginGone()) {
                    LOG.infof("plugin %s: removed, no instance left", pluginId);
                    plugin.takeStatus(PluginStatusCalculator.calculate(pluginId, List.of(), now));
                    plugin.markRemoved();
                    return store.save(tx, plugin).chain(() -> store.deleteInstances(tx, pluginId, result.removed()))
                            .replaceWith(result);
                }
                List<PluginInstanceRow> silenced = new ArrayList<>();
                for (PluginInstance kept : result.kept()) {
                    if (result.silenced().contains(kept.nodeId())) {
                        rows.stream().filter(r -> r.nodeId.equals(kept.nodeId())).findFirst().ifPresent(row -> {
                            row.take(kept);
                            silenced.add(row);
                        });
                    }
                }
                recompute(plugin, before, result.kept(), now);
                Uni<Void> writes = Uni.createFrom().voidItem();
                for (PluginInstanceRow row : silenced) {
                    writes = writes.chain(() -> store.save(tx, row));
                }
                return writes.chain(() -> store.save(tx, plugin))
                        .chain(() -> store.deleteInstances(tx, pluginId, result.removed()))
                        .replaceWith(result);
            });
        }));
    }
}
