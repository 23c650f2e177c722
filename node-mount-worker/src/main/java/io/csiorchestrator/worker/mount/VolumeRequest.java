package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Everything a node or controller call needs about one volume. {@code secrets} and
 * {@code mountFlags} are plain here (opened from the sealed form just before the call) and
 * {@link #toString()} never shows them.
 */
public record VolumeRequest(
        String externalVolumeId,
        AccessMode accessMode,
        AttachmentMode attachmentMode,
        String fsType,
        List<String> mountFlags,
        Map<String, String> secrets,
        Map<String, String> volumeContext,
        Map<String, String> publishContext,
        boolean readOnly,
        Path stagingPath,
        Path targetPath) {

    public VolumeRequest {
        mountFlags = mountFlags == null ? List.of() : List.copyOf(mountFlags);
        secrets = secrets == null ? Map.of() : Map.copyOf(secrets);
        volumeContext = volumeContext == null ? Map.of() : Map.copyOf(volumeContext);
        publishContext = publishContext == null ? Map.of() : Map.copyOf(publishContext);
    }

    @Override
    public String toString() {
        return "VolumeRequest[externalVolumeId=" + externalVolumeId + ", accessMode=" + accessMode
                + ", attachmentMode=" + attachmentMode + ", fsType=" + fsType + ", mountFlags=[redacted x"
                + mountFlags.size() + "], secrets=" + secrets.keySet() + " (values redacted), readOnly=" + readOnly
                + ", stagingPath=" + stagingPath + ", targetPath=" + targetPath + "]";
    }
}
