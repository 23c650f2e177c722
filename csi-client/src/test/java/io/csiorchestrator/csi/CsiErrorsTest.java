package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.grpc.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.EnumSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CsiErrorsTest {

    private static final CallSubject PUBLISH_V1_ON_N1 = CallSubject.of(ControllerPublishVolumeRequest.newBuilder()
            .setVolumeId("v1").setNodeId("n1").putSecrets("password", "hunter2").build());

    @ParameterizedTest
    @EnumSource(CsiRpc.class)
    void notFoundCountsAsDoneOnlyForTheReleaseCalls(CsiRpc rpc) {
        Set<CsiRpc> releases = EnumSet.of(CsiRpc.NODE_UNPUBLISH_VOLUME, CsiRpc.NODE_UNSTAGE_VOLUME,
                CsiRpc.CONTROLLER_UNPUBLISH_VOLUME);
        assertEquals(releases.contains(rpc), CsiErrors.countsAsDone(rpc, Status.Code.NOT_FOUND), rpc.name());
        assertFalse(CsiErrors.countsAsDone(rpc, Status.Code.FAILED_PRECONDITION));
        assertFalse(CsiErrors.countsAsDone(rpc, Status.Code.UNAVAILABLE));
    }

    @Test
    void controllerPublishMessagesFollowTheOperatorTable() {
        CsiRpc rpc = CsiRpc.CONTROLLER_PUBLISH_VOLUME;
        assertEquals("volume v1 or node n1 could not be found",
                CsiErrors.operatorMessage(rpc, Status.Code.NOT_FOUND, PUBLISH_V1_ON_N1));
        assertEquals("volume v1 is already published at node n1 with capabilities or read-only setting"
                        + " incompatible with this request",
                CsiErrors.operatorMessage(rpc, Status.Code.ALREADY_EXISTS, PUBLISH_V1_ON_N1));
        assertEquals("node n1 has reached the maximum number of attached volumes",
                CsiErrors.operatorMessage(rpc, Status.Code.RESOURCE_EXHAUSTED, PUBLISH_V1_ON_N1));
        assertEquals("volume v1 is already published on another node and has no multi-node capability",
                CsiErrors.operatorMessage(rpc, Status.Code.FAILED_PRECONDITION, PUBLISH_V1_ON_N1));
    }

    @Test
    void internalPointsAtThePluginLogs() {
        assertEquals("the CSI plugin returned an internal error for NodeStageVolume on volume v1;"
                        + " check the plugin's logs",
                CsiErrors.operatorMessage(CsiRpc.NODE_STAGE_VOLUME, Status.Code.INTERNAL, PUBLISH_V1_ON_N1));
    }

    @Test
    void nodePublishFailedPreconditionSaysToStageAgain() {
        CallSubject subject = CallSubject.of(NodePublishVolumeRequest.newBuilder().setVolumeId("v9")
                .setStagingTargetPath("/stage/v9").setTargetPath("/target/a").build());
        assertEquals("volume v9 cannot be published at /target/a: it is not staged at /stage/v9 or its"
                        + " capabilities do not fit; stage it again before publishing",
                CsiErrors.operatorMessage(CsiRpc.NODE_PUBLISH_VOLUME, Status.Code.FAILED_PRECONDITION, subject));
    }

    @Test
    void unimplementedNamesTheCall() {
        assertEquals("the CSI plugin does not implement NodeStageVolume",
                CsiErrors.operatorMessage(CsiRpc.NODE_STAGE_VOLUME, Status.Code.UNIMPLEMENTED, CallSubject.NONE));
    }

    @Test
    void uncertainCodesSayTheOperationMayStillBeInProgress() {
        for (Status.Code code : EnumSet.of(Status.Code.UNAVAILABLE, Status.Code.DEADLINE_EXCEEDED,
                Status.Code.CANCELLED)) {
            assertTrue(CsiErrors.operatorMessage(CsiRpc.NODE_STAGE_VOLUME, code, PUBLISH_V1_ON_N1)
                    .contains("may still be in progress"), code.name());
        }
    }

    @Test
    void everyRpcAndCodeHasAMessageThatNamesNoSecret() {
        CallSubject subject = CallSubject.of(NodeStageVolumeRequest.newBuilder().setVolumeId("v1")
                .setStagingTargetPath("/s").putSecrets("token", "hunter2").build());
        for (CsiRpc rpc : CsiRpc.values()) {
            for (Status.Code code : Status.Code.values()) {
                String message = CsiErrors.operatorMessage(rpc, code, subject);
                assertFalse(message.isBlank(), rpc + " " + code);
                assertFalse(message.contains("hunter2"), rpc + " " + code);
            }
        }
    }

    @Test
    void callSubjectReadsTheRequestFieldsAndNoSecrets() {
        assertEquals(new CallSubject("v1", "n1", "", "", ""), PUBLISH_V1_ON_N1);
        assertEquals("the volume", CallSubject.NONE.volumeLabel());
        assertEquals("the node", CallSubject.NONE.nodeLabel());
    }

    @ParameterizedTest
    @EnumSource(Status.Code.class)
    void failureKindsFollowTheTreatAsColumn(Status.Code code) {
        CsiFailureKind expected = switch (code) {
            case UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED -> CsiFailureKind.UNCERTAIN;
            case RESOURCE_EXHAUSTED, ABORTED -> CsiFailureKind.TRANSIENT;
            case FAILED_PRECONDITION, NOT_FOUND -> CsiFailureKind.PRECONDITION;
            default -> CsiFailureKind.FATAL;
        };
        assertEquals(expected, CsiFailureKind.of(code));
    }

    @Test
    void callExceptionCarriesClassificationAndAttempts() {
        CsiCallException uncertain = new CsiCallException(CsiRpc.NODE_STAGE_VOLUME, Status.Code.UNAVAILABLE,
                "plugin down", "socket closed", 3, "NodeStageVolumeRequest {}", null);
        assertTrue(uncertain.isUncertain());
        assertTrue(uncertain.isRetryable());
        assertFalse(uncertain.isFatal());
        assertEquals("plugin down [NodeStageVolume UNAVAILABLE, 3 attempts]: plugin says: socket closed",
                uncertain.getMessage());

        CsiCallException fatal = new CsiCallException(CsiRpc.NODE_STAGE_VOLUME, Status.Code.UNIMPLEMENTED,
                "no", "", 1, "", null);
        assertTrue(fatal.isFatal());
        assertFalse(fatal.isRetryable());
        assertEquals("no [NodeStageVolume UNIMPLEMENTED, 1 attempt]", fatal.getMessage());
    }
}
