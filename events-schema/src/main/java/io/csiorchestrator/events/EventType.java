package io.csiorchestrator.events;

/**
 * Every event type of the contract: its CloudEvents type, its topic, its Java type and the JSON
 * Schema shipped for consumers in other languages.
 */
public enum EventType {
    CLAIM_REQUESTED("io.csiorchestrator.claim.requested.v1", Topic.CLAIM_REQUESTED, ClaimRequested.class),
    CLAIM_STATUS("io.csiorchestrator.claim.status.v1", Topic.CLAIM_STATUS, ClaimStatus.class),
    NODE_COMMAND("io.csiorchestrator.node.command.v1", Topic.NODE_COMMANDS, NodeCommand.class),
    MOUNT_DONE("io.csiorchestrator.node.command-done.v1", Topic.MOUNT_DONE, MountDone.class),
    PLUGIN_HEALTH("io.csiorchestrator.plugin.health.v1", Topic.PLUGIN_HEALTH, PluginHealth.class),
    PLUGIN_STATUS("io.csiorchestrator.plugin.status.v1", Topic.PLUGIN_STATUS, PluginStatus.class),
    NODE_EVENT("io.csiorchestrator.node.event.v1", Topic.NODE_EVENTS, NodeEvent.class),
    NODE_STATE("io.csiorchestrator.node.state-reported.v1", Topic.NODE_STATE, NodeStateReported.class),
    NODE_LEASE_REQUESTED("io.csiorchestrator.node.lease-requested.v1", Topic.NODE_LEASE_REQUESTS, NodeLeaseRequested.class),
    NODE_LEASE("io.csiorchestrator.node.lease.v1", Topic.NODE_LEASES, NodeLease.class),
    VOLUME_STATUS("io.csiorchestrator.volume.status.v1", Topic.VOLUME_STATUS, VolumeStatus.class),
    PLACEMENT("io.csiorchestrator.placement.v1", Topic.PLACEMENT, Placement.class);

    private final String cloudEventType;
    private final Topic topic;
    private final Class<? extends ContractEvent> javaType;

    EventType(String cloudEventType, Topic topic, Class<? extends ContractEvent> javaType) {
        this.cloudEventType = cloudEventType;
        this.topic = topic;
        this.javaType = javaType;
    }

    /** The {@code ce_type} header value. */
    public String cloudEventType() {
        return cloudEventType;
    }

    public Topic topic() {
        return topic;
    }

    public Class<? extends ContractEvent> javaType() {
        return javaType;
    }

    /** The classpath resource of this event's JSON Schema (draft 2020-12). */
    public String schemaResource() {
        return "/schemas/" + topic.baseName() + ".schema.json";
    }

    /** The short name used in error messages, e.g. {@code claim-requested}. */
    public String displayName() {
        return topic.baseName();
    }

    public static EventType forTopic(Topic topic) {
        for (EventType type : values()) {
            if (type.topic == topic) {
                return type;
            }
        }
        throw new IllegalArgumentException("no event type for topic " + topic);
    }

    public static EventType forCloudEventType(String ceType) {
        for (EventType type : values()) {
            if (type.cloudEventType.equals(ceType)) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown ce_type " + Violation.quote(ceType));
    }
}
