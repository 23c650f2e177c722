package io.csiorchestrator.worker;

import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.worker.mount.NodeVolumePlugin;
import io.csiorchestrator.worker.mount.PluginCallFailure;
import io.csiorchestrator.worker.mount.VolumeCondition;
import io.csiorchestrator.worker.mount.VolumeConditions;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.mount.VolumeStats;
import io.csiorchestrator.worker.mount.VolumeUsages;
import io.csiorchestrator.worker.plugin.PluginRegistry;
import io.csiorchestrator.worker.plugin.PluginSupervisor;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The volume stats poller ({@code csi.worker.condition-interval}): for every volume with a published target whose
 * plugin is healthy and advertises GET_VOLUME_STATS, one NodeGetVolumeStats on the first published target, on the
 * volume's own thread (never beside a command on it). The calls of a pass run one after the other, never together:
 * a pass that sent them all at once put one call per published volume on the plugin in the same moment (a burst in
 * front of the claims' own calls; 191 ms per stats call in one run at 20 claims/s), where one at a time costs the
 * same CPU spread over the pass and leaves the plugin free for the claims between two calls. A pass that has not finished
 * when the next one is due is left to finish; the next one starts at the period after. The one answer gives both:
 * <ul>
 *   <li>the condition, where the plugin also advertises VOLUME_CONDITION: a change ({@link VolumeConditions}) is a
 *       {@code volume-condition} node event;</li>
 *   <li>the usage (issue 34): kept for the {@code csi.volume.stats.*} gauges, and a noticeable change
 *       ({@link VolumeUsages}) is a {@code volume-usage} node event for claim-service.</li>
 * </ul>
 * A failed call is logged and tried at the next poll. With nothing published a poll reads the records and stops.
 */
final class VolumeStatsPoller {

    private static final Logger LOG = Logger.getLogger(NodeMountWorker.class);

    private final String nodeId;
    private final Supplier<Map<VolumeKey, VolumeRecord>> records;
    private final PluginRegistry registry;
    private final VolumeSerializer serializer;
    private final EventSink events;
    private final Clock clock;
    private final VolumeConditions conditions = new VolumeConditions();
    private final VolumeUsages usages = new VolumeUsages();
    /** Whether a pass's calls are still running (the next pass waits for the period after). */
    private final java.util.concurrent.atomic.AtomicBoolean passRunning = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile Runnable usageSeen = () -> { };

    VolumeStatsPoller(String nodeId, Supplier<Map<VolumeKey, VolumeRecord>> records, PluginRegistry registry,
                      VolumeSerializer serializer, EventSink events, Clock clock) {
        this.nodeId = nodeId;
        this.records = records;
        this.registry = registry;
        this.serializer = serializer;
        this.events = events;
        this.clock = clock;
    }

    /** Runs after every usage seen and after each pass forgot unpublished volumes (the gauges' refresh). */
    void onUsageSeen(Runnable then) {
        usageSeen = then;
    }

    VolumeConditions conditions() {
        return conditions;
    }

    VolumeUsages usages() {
        return usages;
    }

    /** One pass over the published volumes (see the class comment). */
    void poll() {
        if (!passRunning.compareAndSet(false, true)) {
            LOG.debugf("volume stats: the previous pass is still running; this one is skipped");
            return;
        }
        Set<VolumeKey> published = new HashSet<>();
        List<Call> calls = new ArrayList<>();
        for (Map.Entry<VolumeKey, VolumeRecord> e : records.get().entrySet()) {
            VolumeKey key = e.getKey();
            Optional<String> target = e.getValue().users().stream().filter(u -> u.state() == PublishState.PUBLISHED)
                    .map(Usage::targetPath).findFirst();
            if (target.isEmpty()) {
                continue;
            }
            published.add(key);
            String pluginId = e.getValue().pluginId();
            Optional<PluginFingerprint.NodeFingerprint> node = registry.get(pluginId)
                    .flatMap(PluginSupervisor::fingerprint).flatMap(PluginFingerprint::node);
            boolean stats = node.map(n -> n.capabilities().contains(NodeServiceCapability.RPC.Type.GET_VOLUME_STATS))
                    .orElse(false);
            boolean condition = stats && node.get().capabilities().contains(
                    NodeServiceCapability.RPC.Type.VOLUME_CONDITION);
            Optional<NodeVolumePlugin> plugin = registry.node(pluginId);
            if (!stats || plugin.isEmpty()) {
                continue;
            }
            calls.add(new Call(key, pluginId, e.getValue().externalVolumeId(), Path.of(target.get()), condition,
                    plugin.get()));
        }
        conditions.retainOnly(published);
        if (usages.retainOnly(published)) {
            usageSeen.run();
        }
        next(calls.iterator());
    }

    /** One volume's call to make in a pass. */
    private record Call(VolumeKey key, String pluginId, String externalId, Path target, boolean condition,
                        NodeVolumePlugin plugin) {
    }

    /** Sends the next call of the pass on its volume's thread; the one after it when it is done. */
    private void next(Iterator<Call> calls) {
        if (!calls.hasNext()) {
            passRunning.set(false);
            return;
        }
        Call call = calls.next();
        try {
            serializer.submit(call.key(), () -> {
                ask(call);
                return null;
            }).whenComplete((ignored, failure) -> next(calls));
        } catch (RuntimeException stopping) {
            passRunning.set(false); // the serializer's executor shut down: the worker stops
        }
    }

    private void ask(Call call) {
        VolumeKey key = call.key();
        try {
            VolumeStats seen = call.plugin().volumeStats(call.externalId(), call.target());
            if (call.condition()) {
                seen.condition().flatMap(c -> conditions.observe(key, call.pluginId(), c, clock.instant()))
                        .ifPresent(this::reportCondition);
            }
            if (!seen.usage().empty()) {
                usages.observe(key, call.pluginId(), seen.usage()).ifPresent(this::reportUsage);
                usageSeen.run();
            }
        } catch (PluginCallFailure f) {
            LOG.debugf("volume stats of %s: %s", key, f.getMessage());
        }
    }

    private void reportCondition(VolumeConditions.Change change) {
        VolumeCondition condition = change.condition();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("condition", condition.abnormal() ? "abnormal" : "normal");
        String message = condition.message().length() > 1024 ? condition.message().substring(0, 1024) : condition.message();
        if (!message.isBlank()) {
            details.put("message", message);
        }
        LOG.infof("volume %s: condition %s%s", change.key(), details.get("condition"),
                message.isBlank() ? "" : " (" + message + ")");
        events.publish(new NodeEvent(nodeId, null, NodeEventKind.VOLUME_CONDITION,
                condition.abnormal() ? "Volume condition abnormal" : "Volume condition normal", change.pluginId(),
                change.key().namespace(), change.key().volumeId(), null, null, null, details, change.since()));
    }

    private void reportUsage(VolumeUsages.Seen seen) {
        LOG.debugf("volume %s: usage %s", seen.key(), seen.usage());
        events.publish(new NodeEvent(nodeId, null, NodeEventKind.VOLUME_USAGE, "Volume usage", seen.pluginId(),
                seen.key().namespace(), seen.key().volumeId(), null, null, null, seen.usage().toDetails(),
                clock.instant()));
    }
}
