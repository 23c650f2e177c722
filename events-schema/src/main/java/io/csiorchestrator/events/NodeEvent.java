package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.Map;

/**
 * Something that happened on a node, for monitoring: a mount or unmount (with success or
 * error), a plugin health transition, a heal. In the spirit of Nomad's node events. Topic
 * {@code node-events}, key: node id.
 *
 * @param subsystem always "CSI" today, as Nomad's node events name it
 * @param message   a sentence for operators, e.g. "Mount volume"
 * @param success   for actions: whether it worked
 * @param error     for failed actions: the operator message
 * @param details   extra key/values (never secrets)
 * @param leaseEpoch the sending worker's lease epoch; null from a sender that predates leases or holds none
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record NodeEvent(
        String nodeId,
        String subsystem,
        NodeEventKind kind,
        String message,
        String pluginId,
        String namespace,
        String volumeId,
        String allocationId,
        Boolean success,
        String error,
        Map<String, String> details,
        Instant occurredAt,
        Long leaseEpoch) implements ContractEvent {

    public static final String SUBSYSTEM_CSI = "CSI";

    public NodeEvent {
        subsystem = subsystem == null ? SUBSYSTEM_CSI : subsystem;
        details = Copies.map(details);
    }

    /** An event without lease epoch. */
    public NodeEvent(String nodeId, String subsystem, NodeEventKind kind, String message, String pluginId,
                     String namespace, String volumeId, String allocationId, Boolean success, String error,
                     Map<String, String> details, Instant occurredAt) {
        this(nodeId, subsystem, kind, message, pluginId, namespace, volumeId, allocationId, success, error, details,
                occurredAt, null);
    }

    /** This event with the sender's lease epoch. */
    public NodeEvent withLeaseEpoch(Long epoch) {
        return new NodeEvent(nodeId, subsystem, kind, message, pluginId, namespace, volumeId, allocationId, success,
                error, details, occurredAt, epoch);
    }

    @Override
    public EventType eventType() {
        return EventType.NODE_EVENT;
    }

    @Override
    public String recordKey() {
        return nodeId;
    }

    @Override
    public void checkFields(Violations v) {
        v.id("nodeId", nodeId);
        v.text("subsystem", subsystem, 64);
        v.required("kind", kind);
        v.text("message", message, 1024);
        v.optionalId("pluginId", pluginId);
        v.optionalId("namespace", namespace);
        v.optionalId("volumeId", volumeId);
        v.optionalId("allocationId", allocationId);
        v.optionalText("error", error, 8192);
        v.stringMap("details", details, 64);
        v.required("occurredAt", occurredAt);
        if (leaseEpoch != null && leaseEpoch < 1) {
            v.add("leaseEpoch", leaseEpoch, "must be at least 1");
        }
    }
}
