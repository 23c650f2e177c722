package io.csiorchestrator.events;

/**
 * The topics of the contract, their default partition counts, cleanup policy and key rule.
 * Names on the broker come from a {@link TopicCatalog}, which adds a configurable prefix.
 */
public enum Topic {
    CLAIM_REQUESTED("claim-requested", 6, false, "volume id"),
    CLAIM_STATUS("claim-status", 6, false, "volume id"),
    NODE_COMMANDS("node-commands", 12, false, "node id"),
    MOUNT_DONE("mount-done", 6, false, "node id"),
    PLUGIN_HEALTH("plugin-health", 6, false, "plugin id/node id"),
    PLUGIN_STATUS("plugin-status", 3, true, "plugin id"),
    NODE_EVENTS("node-events", 6, false, "node id"),
    NODE_STATE("node-state", 6, true, "node id"),
    /** A worker asks for or renews its node's lease (issue 19). */
    NODE_LEASE_REQUESTS("node-lease-requests", 6, false, "node id"),
    /** plugin-registry-service's grants, lapses and fences of node leases; the newest per node is its lease. */
    NODE_LEASES("node-leases", 6, true, "node id"),
    /** claim-service's results of creates and deletes of volumes and snapshots, for schedulers (issue 14). */
    VOLUME_STATUS("volume-status", 6, false, "namespace/volume id"),
    /**
     * claim-service's view for schedulers (issue 34): per node and plugin the topology, limit, volumes held and health;
     * per plugin and topology segment the capacity; the newest entry per key is the current one.
     */
    PLACEMENT("placement", 3, true, "node/plugin id/node id or capacity/plugin id/segment");

    /** Suffix of the dead-letter topic that takes a topic's malformed records. */
    public static final String DEAD_LETTER_SUFFIX = "-dead-letter";

    private final String baseName;
    private final int defaultPartitions;
    private final boolean compacted;
    private final String keyRule;

    Topic(String baseName, int defaultPartitions, boolean compacted, String keyRule) {
        this.baseName = baseName;
        this.defaultPartitions = defaultPartitions;
        this.compacted = compacted;
        this.keyRule = keyRule;
    }

    public String baseName() {
        return baseName;
    }

    public int defaultPartitions() {
        return defaultPartitions;
    }

    /** Whether the topic is log-compacted (cleanup.policy=compact). */
    public boolean compacted() {
        return compacted;
    }

    /** What the record key is, in words. */
    public String keyRule() {
        return keyRule;
    }
}
