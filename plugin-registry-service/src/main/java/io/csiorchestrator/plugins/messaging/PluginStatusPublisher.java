package io.csiorchestrator.plugins.messaging;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.plugins.domain.PluginStatusCalculator;
import io.csiorchestrator.plugins.metrics.PluginGauges;
import io.csiorchestrator.plugins.store.PluginInstanceRow;
import io.csiorchestrator.plugins.store.PluginStore;
import io.opentelemetry.api.trace.Span;
import io.smallrye.mutiny.Uni;
import io.smallrye.reactive.messaging.TracingMetadata;
import io.smallrye.reactive.messaging.MutinyEmitter;
import io.smallrye.reactive.messaging.kafka.Record;
import io.smallrye.reactive.messaging.kafka.api.OutgoingKafkaRecordMetadata;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.mutiny.sqlclient.Pool;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.Optional;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.eclipse.microprofile.reactive.messaging.Channel;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.jboss.logging.Logger;

/**
 * Publishes the current status of a plugin on {@code plugin-status} (key: plugin id), or a tombstone
 * once the plugin is gone. Called after the transaction that changed the plugin has committed.
 *
 * <p>Ordering: each publication takes a per-plugin advisory lock, reads the committed plugin and its
 * instances, sends, waits for the broker's acknowledgement and only then releases the lock. So
 * publications of one plugin never overlap, and each reads a view at least as new as the previous
 * one: the last record of a plugin on the compacted topic is always its latest committed state,
 * whichever service instance, partition or sweep changed it.
 *
 * <p>The status carries {@code updatedAt} = when the plugin last changed, not when it was published,
 * so publishing again without a change (e.g. on a redelivered report) sends the very same value.
 *
 * <p>After the broker's acknowledgement the published status version is recorded on the plugin row
 * (by a targeted update, so a concurrent change is never overwritten); a removed plugin's row is
 * deleted once its tombstone is out. A plugin whose publication did not complete is found and
 * published again by the sweep.
 */
@ApplicationScoped
public class PluginStatusPublisher {

    static final String SOURCE = "/plugin-registry-service";
    private static final Logger LOG = Logger.getLogger(PluginStatusPublisher.class);

    @Inject
    Pool pool;
    @Inject
    PluginStore store;
    @Inject
    TopicCatalog topics;
    @Inject
    PluginGauges gauges;
    @Inject
    @Channel("plugin-status")
    MutinyEmitter<Record<String, String>> emitter;

    /**
     * Publishes the plugin's committed state (or its tombstone) and completes once the broker has it;
     * then records the published version, or deletes the row of a removed plugin.
     */
    public Uni<Void> publishCurrent(String pluginId) {
        return publishCurrent(pluginId, null);
    }

    /**
     * As {@link #publishCurrent(String)}, the record carrying the trace of {@code trace} (the
     * {@code plugin-health} record that caused it) even when the send runs on another thread than
     * the one that received that record; null: the current context.
     */
    public Uni<Void> publishCurrent(String pluginId, io.opentelemetry.context.Context trace) {
        return pool.withTransaction(tx -> store.lockPublishing(tx, pluginId)
                .chain(() -> store.find(tx, pluginId))
                .invoke(plugin -> {
                    // The committed state, read under the publishing lock: what the gauges show.
                    if (plugin == null || plugin.removed) {
                        gauges.remove(pluginId);
                    } else {
                        gauges.update(pluginId, PluginGauges.Counts.of(plugin));
                    }
                })
                .chain(plugin -> {
                    if (plugin == null) {
                        // Gone and its tombstone already published: publishing again is harmless.
                        return send(pluginId, Optional.empty(), trace);
                    }
                    long version = plugin.statusVersion;
                    if (plugin.removed) {
                        return send(pluginId, Optional.empty(), trace)
                                .chain(() -> store.deleteRemoved(tx, pluginId, version))
                                .replaceWithVoid();
                    }
                    return store.instances(tx, pluginId)
                            .map(rows -> PluginStatusCalculator.calculate(pluginId,
                                    rows.stream().map(PluginInstanceRow::toInstance).toList(), plugin.updatedAt))
                            .chain(status -> send(pluginId, Optional.of(status), trace))
                            .chain(() -> store.markPublished(tx, pluginId, version))
                            .replaceWithVoid();
                }));
    }

    private Uni<Void> send(String pluginId, Optional<PluginStatus> status, io.opentelemetry.context.Context trace) {
        String value = status.map(EventCodec::encodeToString).orElse(null);
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.PLUGIN_STATUS, SOURCE).writeTo(headers);
        Message<Record<String, String>> message = Message.of(Record.of(pluginId, value))
                .addMetadata(OutgoingKafkaRecordMetadata.<String>builder()
                        .withTopic(topics.name(Topic.PLUGIN_STATUS))
                        .withHeaders(headers)
                        .build());
        if (trace != null && Span.fromContext(trace).getSpanContext().isValid()) {
            // SmallRye's outgoing span (and traceparent header) takes this as parent instead of Context.current().
            message = message.addMetadata(TracingMetadata.withCurrent(trace));
        }
        Context context = Vertx.currentContext();
        Uni<Void> sent = emitter.sendMessage(message)
                .invoke(() -> LOG.debugf("published %s of plugin %s", value == null ? "tombstone" : "status", pluginId));
        // The broker's acknowledgement arrives on a producer thread: come back to the transaction's context.
        return context == null ? sent : sent.emitOn(command -> context.runOnContext(ignored -> command.run()));
    }
}
