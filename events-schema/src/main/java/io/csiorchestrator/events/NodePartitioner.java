package io.csiorchestrator.events;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.utils.Utils;

/**
 * The one rule that places a node's records on a partition of {@code node-commands}: Kafka's
 * rule for keyed records ({@code toPositive(murmur2(utf8(nodeId))) % partitions}). Producers set
 * this partition explicitly on every record, and each node's worker assigns itself the same
 * partition, so both agree whatever partitioner a client is configured with.
 */
public final class NodePartitioner {

    private NodePartitioner() {
    }

    /** The partition of {@code node-commands} (of {@code partitionCount} partitions) for {@code nodeId}. */
    public static int partitionFor(String nodeId, int partitionCount) {
        PathSafeId.require("node id", nodeId);
        if (partitionCount <= 0) {
            throw new IllegalArgumentException("partition count must be positive, was " + partitionCount);
        }
        return Utils.toPositive(Utils.murmur2(nodeId.getBytes(StandardCharsets.UTF_8))) % partitionCount;
    }
}
