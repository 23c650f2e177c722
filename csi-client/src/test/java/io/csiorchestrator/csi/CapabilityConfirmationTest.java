package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesRequest;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesResponse;
import io.csiorchestrator.csi.v1.VolumeCapability;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CapabilityConfirmationTest {

    private static final VolumeCapability WRITER_EXT4 = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
            CsiAttachmentMode.FILE_SYSTEM, MountOptions.of("ext4", "noatime", "nodev"));
    private static final VolumeCapability READER_EXT4 = VolumeCapabilities.build(
            CsiAccessMode.MULTI_NODE_READER_ONLY, CsiAttachmentMode.FILE_SYSTEM, MountOptions.of("ext4"));

    private static final ValidateVolumeCapabilitiesRequest REQUEST = ValidateVolumeCapabilitiesRequest.newBuilder()
            .setVolumeId("v1")
            .addVolumeCapabilities(WRITER_EXT4)
            .putVolumeContext("pool", "fast")
            .putParameters("replicas", "2")
            .putSecrets("token", "hunter2")
            .build();

    @Test
    void aMissingConfirmationIsAcceptedAsNotConfirmed() {
        CapabilityConfirmation result = CapabilityConfirmation.check(REQUEST,
                ValidateVolumeCapabilitiesResponse.getDefaultInstance());
        assertEquals(CapabilityConfirmation.Outcome.NOT_CONFIRMED, result.outcome());
        assertTrue(result.accepted());
    }

    @Test
    void aConfirmationOfWhatWasAskedIsConfirmedWhateverTheFlagOrder() {
        VolumeCapability reordered = WRITER_EXT4.toBuilder()
                .setMount(WRITER_EXT4.getMount().toBuilder().clearMountFlags().addMountFlags("nodev")
                        .addMountFlags("noatime"))
                .build();
        ValidateVolumeCapabilitiesResponse response = ValidateVolumeCapabilitiesResponse.newBuilder()
                .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                        .addVolumeCapabilities(READER_EXT4)
                        .addVolumeCapabilities(reordered)
                        .putVolumeContext("pool", "fast"))
                .build();

        CapabilityConfirmation result = CapabilityConfirmation.check(REQUEST, response);

        assertEquals(CapabilityConfirmation.Outcome.CONFIRMED, result.outcome(), result.message());
        assertTrue(result.accepted());
    }

    @Test
    void aConfirmationOfSomethingElseIsAMismatch() {
        ValidateVolumeCapabilitiesResponse response = ValidateVolumeCapabilitiesResponse.newBuilder()
                .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                        .addVolumeCapabilities(READER_EXT4))
                .setMessage("only readers; token hunter2 is fine")
                .build();

        CapabilityConfirmation result = CapabilityConfirmation.check(REQUEST, response);

        assertEquals(CapabilityConfirmation.Outcome.MISMATCH, result.outcome());
        assertFalse(result.accepted());
        assertTrue(result.message().contains("requested capability #1 (SINGLE_NODE_WRITER, file-system ext4)"),
                result.message());
        assertTrue(result.message().contains("only readers"), result.message());
        assertFalse(result.message().contains("hunter2"), result.message());
    }

    @Test
    void differentFlagsOrFsTypeAreAMismatch() {
        VolumeCapability otherFlags = WRITER_EXT4.toBuilder()
                .setMount(WRITER_EXT4.getMount().toBuilder().clearMountFlags().addMountFlags("noatime"))
                .build();
        ValidateVolumeCapabilitiesResponse response = ValidateVolumeCapabilitiesResponse.newBuilder()
                .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                        .addVolumeCapabilities(otherFlags))
                .build();
        assertFalse(CapabilityConfirmation.check(REQUEST, response).accepted());
    }

    @Test
    void anEchoedContextOrParametersMustBeUnchanged() {
        ValidateVolumeCapabilitiesResponse otherContext = ValidateVolumeCapabilitiesResponse.newBuilder()
                .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                        .addVolumeCapabilities(WRITER_EXT4)
                        .putVolumeContext("pool", "slow"))
                .build();
        ValidateVolumeCapabilitiesResponse otherParameters = ValidateVolumeCapabilitiesResponse.newBuilder()
                .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                        .addVolumeCapabilities(WRITER_EXT4)
                        .putParameters("replicas", "3"))
                .build();

        CapabilityConfirmation context = CapabilityConfirmation.check(REQUEST, otherContext);
        assertEquals(CapabilityConfirmation.Outcome.MISMATCH, context.outcome());
        assertTrue(context.message().contains("volume context"), context.message());
        assertEquals(CapabilityConfirmation.Outcome.MISMATCH,
                CapabilityConfirmation.check(REQUEST, otherParameters).outcome());
    }
}
