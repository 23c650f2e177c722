package io.csiorchestrator.hostpath.fence;

/**
 * A storage fence of one volume from one node, set by ControllerUnpublishVolume(volume, node) and
 * lifted by ControllerPublishVolume(volume, node).
 *
 * @param volumeId    the fenced volume
 * @param nodeId      the node it is fenced from
 * @param requested   the sequence number of the latest ControllerUnpublishVolume that set it
 * @param applied     the latest {@code requested} that node's plugin has enforced (0: not yet)
 * @param problem     null when every mount of the volume on that node was read-only at {@code applied}; else
 *                    what could not be made read-only (e.g. a file open for writing keeps a mount busy)
 * @param requestedAt when it was set, ISO-8601 (for people reading the file)
 */
public record Fence(String volumeId, String nodeId, long requested, long applied, String problem, String requestedAt) {

    /** Whether the node's plugin has answered the latest request (enforced it, or said why it could not). */
    public boolean answered() {
        return applied >= requested;
    }

    /** Whether the node's plugin has enforced the latest request completely. */
    public boolean enforced() {
        return answered() && problem == null;
    }

    public boolean is(String volume, String node) {
        return volumeId.equals(volume) && nodeId.equals(node);
    }

    public Fence answeredWith(long appliedSequence, String problemOrNull) {
        return new Fence(volumeId, nodeId, requested, appliedSequence, problemOrNull, requestedAt);
    }
}
