package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.v1.VolumeCapability;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RequestChecksTest {

    @Test
    void idsAreBoundedAndCannotEscapeTheStateDir() {
        assertEquals("hp-1", RequestChecks.requireId("volume_id", "hp-1"));
        for (String bad : new String[]{"", "a/b", "..", "a..b", ".", "x".repeat(129), "a\nb"}) {
            StatusRuntimeException failure = assertThrows(StatusRuntimeException.class,
                    () -> RequestChecks.requireId("volume_id", bad), bad);
            assertEquals(Status.Code.INVALID_ARGUMENT, failure.getStatus().getCode());
        }
    }

    @Test
    void namesOnlyNeedToBeBoundedAndPrintable() {
        assertEquals("team/data", RequestChecks.requireName("team/data"));
        assertThrows(StatusRuntimeException.class, () -> RequestChecks.requireName(""));
        assertThrows(StatusRuntimeException.class, () -> RequestChecks.requireName("x".repeat(129)));
        assertThrows(StatusRuntimeException.class, () -> RequestChecks.requireName("a\tb"));
    }

    @Test
    void pathsAreAbsoluteWithoutDotDot() {
        assertEquals(Path.of("/a/b"), RequestChecks.requirePath("target_path", "/a/./b"));
        for (String bad : new String[]{"", "relative", "/a/../b", "/a\u0000"}) {
            assertThrows(StatusRuntimeException.class, () -> RequestChecks.requirePath("target_path", bad), bad);
        }
    }

    @Test
    void blockAndUnknownModesAreUnsupported() {
        VolumeCapability block = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                CsiAttachmentMode.BLOCK_DEVICE, MountOptions.NONE);
        assertTrue(RequestChecks.unsupportedBecause(block).isPresent());
        assertTrue(RequestChecks.unsupportedBecause(VolumeCapability.getDefaultInstance()).isPresent());
        assertTrue(RequestChecks.unsupportedBecause(VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_READER_ONLY,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE)).isEmpty());
        assertThrows(StatusRuntimeException.class,
                () -> RequestChecks.requireCapability("volume_capability", block, true));
        assertThrows(StatusRuntimeException.class, () -> RequestChecks.requireCapability("volume_capability",
                VolumeCapability.getDefaultInstance(), false));
    }
}
