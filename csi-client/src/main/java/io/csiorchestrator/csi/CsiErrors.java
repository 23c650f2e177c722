package io.csiorchestrator.csi;

import io.grpc.Status;

import java.util.EnumSet;
import java.util.Set;

/**
 * The one place that says what a gRPC status code from a CSI plugin means to an operator,
 * per call, and which failures of a release call count as done.
 */
public final class CsiErrors {

    /** Release calls: NOT_FOUND from them means the thing is already gone, i.e. done. */
    private static final Set<CsiRpc> NOT_FOUND_MEANS_DONE = EnumSet.of(
            CsiRpc.NODE_UNPUBLISH_VOLUME,
            CsiRpc.NODE_UNSTAGE_VOLUME,
            CsiRpc.CONTROLLER_UNPUBLISH_VOLUME);

    private CsiErrors() {
    }

    /** Whether a failure of {@code rpc} with {@code code} means the call's goal is already reached. */
    public static boolean countsAsDone(CsiRpc rpc, Status.Code code) {
        return code == Status.Code.NOT_FOUND && NOT_FOUND_MEANS_DONE.contains(rpc);
    }

    /**
     * The sentence an operator sees for a failure of {@code rpc} with {@code code}. It names what
     * the call was about but never a secret; the plugin's own status message is kept apart
     * (see {@link CsiCallException#pluginMessage()}).
     */
    public static String operatorMessage(CsiRpc rpc, Status.Code code, CallSubject subject) {
        String volume = subject.volumeLabel();
        String node = subject.nodeLabel();
        return switch (code) {
            case UNAVAILABLE -> "the CSI plugin is not answering on its socket (" + rpc
                    + " for " + volume + "); the operation may still be in progress";
            case DEADLINE_EXCEEDED -> "the CSI plugin did not answer " + rpc + " for " + volume
                    + " in time; the operation may still be in progress";
            case CANCELLED -> rpc + " for " + volume + " was cancelled; the operation may still be in progress";
            case RESOURCE_EXHAUSTED -> switch (rpc) {
                case CONTROLLER_PUBLISH_VOLUME, NODE_STAGE_VOLUME, NODE_PUBLISH_VOLUME ->
                        node + " has reached the maximum number of attached volumes";
                case CREATE_VOLUME -> "the storage provider has no capacity left for " + volume;
                default -> "the CSI plugin is out of resources for " + rpc + "; retry later";
            };
            case ABORTED -> "another operation is pending on " + volume + "; " + rpc
                    + " is retried once it finished";
            case FAILED_PRECONDITION -> switch (rpc) {
                case CONTROLLER_PUBLISH_VOLUME -> volume + " is already published on another node"
                        + " and has no multi-node capability";
                case NODE_STAGE_VOLUME -> volume + " cannot be staged on " + node
                        + ": its capabilities do not fit the volume or it is not published to this node;"
                        + " validate the volume's capabilities before staging again";
                case NODE_PUBLISH_VOLUME -> volume + " cannot be published"
                        + (subject.targetPath().isEmpty() ? "" : " at " + subject.targetPath())
                        + ": it is not staged"
                        + (subject.stagingTargetPath().isEmpty() ? "" : " at " + subject.stagingTargetPath())
                        + " or its capabilities do not fit; stage it again before publishing";
                case NODE_UNSTAGE_VOLUME -> volume + " is still published on " + node
                        + "; unpublish every target before unstaging";
                case DELETE_VOLUME -> volume + " is still in use (published, or it has snapshots)";
                case PROBE -> "the CSI plugin reports itself unhealthy";
                case NODE_EXPAND_VOLUME -> volume + " cannot be expanded on " + node
                        + " in its present state (the controller has not expanded it yet, or it is not staged"
                        + " or published there); not retried";
                case CONTROLLER_EXPAND_VOLUME -> volume + " cannot be expanded in its present state"
                        + " (e.g. the plugin cannot expand it while it is published)";
                case CREATE_VOLUME -> "the source snapshot or volume of " + volume + " is not ready to be copied";
                default -> "a precondition of " + rpc + " for " + volume + " does not hold";
            };
            case NOT_FOUND -> switch (rpc) {
                case CONTROLLER_PUBLISH_VOLUME -> volume + " or " + node + " could not be found";
                case NODE_UNPUBLISH_VOLUME, NODE_UNSTAGE_VOLUME, CONTROLLER_UNPUBLISH_VOLUME ->
                        volume + " is already gone";
                default -> volume + " could not be found by the CSI plugin";
            };
            case ALREADY_EXISTS -> switch (rpc) {
                case CONTROLLER_PUBLISH_VOLUME -> volume + " is already published at " + node
                        + " with capabilities or read-only setting incompatible with this request";
                case NODE_STAGE_VOLUME -> volume + " is already staged"
                        + (subject.stagingTargetPath().isEmpty() ? "" : " at " + subject.stagingTargetPath())
                        + " with capabilities incompatible with this request";
                case NODE_PUBLISH_VOLUME -> volume + " is already published"
                        + (subject.targetPath().isEmpty() ? "" : " at " + subject.targetPath())
                        + " with capabilities or read-only setting incompatible with this request";
                case CREATE_VOLUME -> volume + " already exists with a size, capabilities or content source"
                        + " incompatible with this request";
                case CREATE_SNAPSHOT -> "a snapshot of that name already exists for a volume other than " + volume;
                default -> rpc + " for " + volume + " conflicts with an existing, incompatible one";
            };
            case INVALID_ARGUMENT -> "the CSI plugin rejected " + rpc + " for " + volume + " as invalid";
            case OUT_OF_RANGE -> "the CSI plugin cannot provide the requested size for " + volume;
            case UNAUTHENTICATED, PERMISSION_DENIED -> "the CSI plugin refused the credentials of "
                    + rpc + " for " + volume + "; check the volume's secrets";
            case UNIMPLEMENTED -> "the CSI plugin does not implement " + rpc;
            case INTERNAL -> "the CSI plugin returned an internal error for " + rpc + " on " + volume
                    + "; check the plugin's logs";
            case OK -> rpc + " for " + volume + " succeeded";
            default -> "the CSI plugin failed " + rpc + " for " + volume + " with " + code
                    + "; check the plugin's logs";
        };
    }
}
