package io.csiorchestrator.plugins.domain;

import io.csiorchestrator.events.PluginHealth;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The ordering and liveness rules of plugin instances, free of any framework so they can be tested
 * with plain values.
 *
 * <ul>
 *   <li>Ordering: a report whose {@code observedAt} is older than the stored one never overwrites it;
 *       the same report delivered twice is a duplicate and changes nothing; a report with the same
 *       {@code observedAt} but different content is treated as stale (a worker never reports two states
 *       at one instant, so the first one stored stands).</li>
 *   <li>Silence: an instance from which nothing new was received for longer than the instance TTL turns
 *       unhealthy, with the reason "no heartbeat from node N for more than TTL". Its next accepted report
 *       makes it heard again.</li>
 *   <li>Removal: an instance from which nothing new was received for longer than the removal delay is
 *       removed once an earlier sweep silenced it (so it is always published unhealthy before it goes, even
 *       when one sweep finds it past both, at the cost of one sweep interval); a plugin with no instance left is
 *       removed.</li>
 * </ul>
 *
 * Silence is measured on the registry's clock from the last accepted report, not from the worker's
 * {@code observedAt}, so clock skew between nodes cannot expire or revive an instance; and only on time in
 * which the registry could have recorded every report ({@link #cutoffs(RecordingWindow)}), so its own outage
 * cannot either.
 */
public final class InstanceRules {

    private final Duration instanceTtl;
    private final Duration removeAfter;

    public InstanceRules(Duration instanceTtl, Duration removeAfter) {
        Objects.requireNonNull(instanceTtl, "instanceTtl");
        Objects.requireNonNull(removeAfter, "removeAfter");
        if (instanceTtl.isNegative() || instanceTtl.isZero()) {
            throw new IllegalArgumentException("the instance TTL must be positive, not " + DurationText.of(instanceTtl));
        }
        if (removeAfter.compareTo(instanceTtl) < 0) {
            throw new IllegalArgumentException("the removal delay (" + DurationText.of(removeAfter)
                    + ") must not be shorter than the instance TTL (" + DurationText.of(instanceTtl) + ")");
        }
        this.instanceTtl = instanceTtl;
        this.removeAfter = removeAfter;
    }

    public Duration instanceTtl() {
        return instanceTtl;
    }

    public Duration removeAfter() {
        return removeAfter;
    }

    /** What {@code report}, received at {@code now}, does to {@code stored} (null when none is stored). */
    public HealthDecision decide(PluginInstance stored, PluginHealth report, Instant now) {
        PluginInstance reported = PluginInstance.reportedBy(report, now);
        if (stored == null) {
            return new HealthDecision.Accepted(reported);
        }
        int order = reported.lastHeartbeat().compareTo(stored.lastHeartbeat());
        if (order > 0) {
            return new HealthDecision.Accepted(reported);
        }
        if (order == 0 && reported.sameReportAs(stored)) {
            return new HealthDecision.Duplicate();
        }
        return new HealthDecision.Stale(stored.lastHeartbeat());
    }

    /** Instances received before this instant and not yet silent are due to turn silent. */
    public Instant silentIfReceivedBefore(Instant now) {
        return now.minus(instanceTtl);
    }

    /** Instances received before this instant are due for removal. */
    public Instant removedIfReceivedBefore(Instant now) {
        return now.minus(removeAfter);
    }

    public boolean dueForRemoval(PluginInstance instance, Instant now) {
        return instance.lastReceived().isBefore(removedIfReceivedBefore(now));
    }

    public boolean dueToTurnSilent(PluginInstance instance, Instant now) {
        return !instance.silent() && instance.lastReceived().isBefore(silentIfReceivedBefore(now));
    }

    /** The reason a silent instance is unhealthy. */
    public String silenceReason(String nodeId) {
        return "no heartbeat from node " + nodeId + " for more than " + DurationText.of(instanceTtl);
    }

    /** Applies silence and removal to the instances of one plugin at {@code now}, the registry never interrupted. */
    public SweepResult sweep(List<PluginInstance> instances, Instant now) {
        return sweep(instances, new Cutoffs(silentIfReceivedBefore(now), removedIfReceivedBefore(now)));
    }

    /**
     * The cutoffs of silence and removal measured on the registry's recorded time only ({@link RecordingWindow}):
     * none while it has not caught up, or not for longer than the TTL (the removal delay) since its last
     * interruption.
     */
    public Cutoffs cutoffs(RecordingWindow window) {
        return new Cutoffs(window.receivedBefore(instanceTtl).orElse(null), window.receivedBefore(removeAfter).orElse(null));
    }

    /** Applies silence and removal to the instances of one plugin with these cutoffs. */
    public SweepResult sweep(List<PluginInstance> instances, Cutoffs cutoffs) {
        List<PluginInstance> kept = new ArrayList<>();
        List<String> silenced = new ArrayList<>();
        List<String> removed = new ArrayList<>();
        for (PluginInstance instance : instances) {
            if (cutoffs.removes(instance) && instance.silent()) {
                removed.add(instance.nodeId());
            } else if (cutoffs.silences(instance)) {
                // past the removal delay too but never silenced (one sweep crossed both cutoffs, e.g. the first
                // after the registry caught up): silenced now, removed by the next sweep, so whoever reads
                // plugin-status always sees an instance turn unhealthy before it goes
                kept.add(instance.silencedBecause(silenceReason(instance.nodeId())));
                silenced.add(instance.nodeId());
            } else {
                kept.add(instance);
            }
        }
        return new SweepResult(kept, silenced, removed);
    }

    /**
     * Instances last received before {@code silentIfReceivedBefore} turn silent, those last received before
     * {@code removedIfReceivedBefore} are removed; null: none does.
     */
    public record Cutoffs(Instant silentIfReceivedBefore, Instant removedIfReceivedBefore) {

        /** Whether any instance can be due at all. */
        public boolean any() {
            return silentIfReceivedBefore != null || removedIfReceivedBefore != null;
        }

        boolean removes(PluginInstance instance) {
            return removedIfReceivedBefore != null && instance.lastReceived().isBefore(removedIfReceivedBefore);
        }

        boolean silences(PluginInstance instance) {
            return silentIfReceivedBefore != null && !instance.silent()
                    && instance.lastReceived().isBefore(silentIfReceivedBefore);
        }
    }

    /**
     * @param kept     the instances left, silenced ones updated
     * @param silenced node ids of instances that just turned silent
     * @param removed  node ids of instances removed
     */
    public record SweepResult(List<PluginInstance> kept, List<String> silenced, List<String> removed) {
        public SweepResult {
            kept = List.copyOf(kept);
            silenced = List.copyOf(silenced);
            removed = List.copyOf(removed);
        }

        public boolean changed() {
            return !silenced.isEmpty() || !removed.isEmpty();
        }

        public boolean pluginGone() {
            return kept.isEmpty();
        }
    }
}
