package io.csiorchestrator.events;

/**
 * An event of the contract: it knows its type (and so its topic), the key its record is
 * produced with, and how to check its own fields.
 */
public sealed interface ContractEvent
        permits ClaimRequested, ClaimStatus, NodeCommand, MountDone, PluginHealth, PluginStatus, NodeEvent,
        NodeStateReported, NodeLeaseRequested, NodeLease, VolumeStatus, Placement {

    EventType eventType();

    /** The Kafka record key, by the topic's key rule. */
    String recordKey();

    /** Adds every problem of this event's fields to {@code violations}. */
    void checkFields(Violations violations);
}
