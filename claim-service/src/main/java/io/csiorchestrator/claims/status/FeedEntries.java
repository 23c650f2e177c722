package io.csiorchestrator.claims.status;

import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.PluginStatus;
import java.time.Instant;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * What the status page's feed shows of a claim-status, node-events or plugin-status record ({@link StatusFeedReader}
 * reads them): one function, which throws for a record that breaks the contract.
 */
public final class FeedEntries {

    private FeedEntries() {
    }

    /** The feed entry of {@code record}, or null for one the page does not show. */
    static FeedEntry entry(ConsumerRecord<String, String> record) {
        String topic = record.topic();
        if (topic.endsWith("claim-status")) {
            CloudEventHeaders.requireValid(record.headers(), EventType.CLAIM_STATUS);
            ClaimStatus s = EventCodec.decode(ClaimStatus.class, record.value());
            return new FeedEntry(0, "claim-status", s.state().wire(), s.occurredAt(), s.namespace() + "/" + s.volumeId(),
                    s.allocationId(), s.nodeId(), null,
                    s.reason() != null ? s.reason() : s.hostPath() != null ? "at " + s.hostPath() : null, null);
        }
        if (topic.endsWith("node-events")) {
            CloudEventHeaders.requireValid(record.headers(), EventType.NODE_EVENT);
            NodeEvent e = EventCodec.decode(NodeEvent.class, record.value());
            String volume = e.volumeId() == null ? null : e.namespace() + "/" + e.volumeId();
            String text = e.error() != null ? e.message() + ": " + e.error() : e.message();
            return new FeedEntry(0, "node-events", e.kind().wire(), e.occurredAt(), volume, e.allocationId(), e.nodeId(),
                    e.pluginId(), text, null);
        }
        if (topic.endsWith("plugin-status")) {
            CloudEventHeaders.requireValid(record.headers(), EventType.PLUGIN_STATUS);
            if (record.key() == null) {
                return null;
            }
            if (record.value() == null) {
                return new FeedEntry(0, "plugin-status", "plugin", Instant.ofEpochMilli(record.timestamp()), null, null,
                        null, record.key(), "removed", null);
            }
            PluginStatus p = EventCodec.decode(PluginStatus.class, record.value());
            return new FeedEntry(0, "plugin-status", "plugin", p.updatedAt(), null, null, null, p.pluginId(),
                    "nodes " + p.nodesHealthy() + "/" + p.nodesExpected() + " healthy, controllers "
                            + p.controllersHealthy() + "/" + p.controllersExpected() + " healthy", p);
        }
        return null;
    }
}
