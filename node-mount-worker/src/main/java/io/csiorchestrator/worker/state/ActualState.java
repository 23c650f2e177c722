package io.csiorchestrator.worker.state;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.ReportedMount;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * The node's actual state for anti-entropy: the records checked against the mount table. Pure. A record entry whose
 * path is not a mount point is reported {@link ReportedMount#MISSING}, never as mounted; a state announced in the
 * record and not finished (staging, publishing, unpublishing, unstaging) is reported as uncertain
 * ({@link ReportedMount#MOUNTING} / {@link ReportedMount#UNMOUNTING}). Idle records (results only) are left out.
 *
 * <p>Read the records first, then the mount table: a mount the record calls done existed when the record was
 * read, so a path missing from the later table was really unmounted (by an unmount that started after the record
 * was read, or behind the worker's back).
 */
public final class ActualState {

    private ActualState() {
    }

    public static NodeStateReported report(String nodeId, long sequence, Instant takenAt, Collection<VolumeRecord> records,
                                           MountTable table) {
        List<NodeStateReported.VolumeState> volumes = new ArrayList<>();
        List<VolumeRecord> sorted = new ArrayList<>(records);
        sorted.sort(Comparator.comparing(VolumeRecord::namespace).thenComparing(VolumeRecord::volumeId));
        for (VolumeRecord r : sorted) {
            if (r.idle()) {
                continue;
            }
            List<NodeStateReported.Publication> publications = new ArrayList<>();
            for (Usage u : r.users()) {
                publications.add(new NodeStateReported.Publication(u.allocationId(), u.accessMode(), u.attachmentMode(),
                        u.readOnly(), publication(u, table), u.commandId()));
            }
            volumes.add(new NodeStateReported.VolumeState(r.namespace(), r.volumeId(), r.pluginId(), r.externalVolumeId(),
                    staging(r, table), publications, List.copyOf(r.controllerPublications().keySet())));
        }
        return new NodeStateReported(nodeId, sequence, takenAt, volumes);
    }

    static ReportedMount staging(VolumeRecord r, MountTable table) {
        return switch (r.stage()) {
            case UNSTAGED -> ReportedMount.NONE;
            case STAGING -> ReportedMount.MOUNTING;
            case UNSTAGING -> ReportedMount.UNMOUNTING;
            case STAGED -> r.stagingPath() != null && table.isMountPoint(Path.of(r.stagingPath()))
                    ? ReportedMount.MOUNTED : ReportedMount.MISSING;
        };
    }

    static ReportedMount publication(Usage u, MountTable table) {
        return switch (u.state()) {
            case PUBLISHING -> ReportedMount.MOUNTING;
            case UNPUBLISHING -> ReportedMount.UNMOUNTING;
            case PUBLISHED -> u.targetPath() != null && table.isMountPoint(Path.of(u.targetPath()))
                    ? ReportedMount.MOUNTED : ReportedMount.MISSING;
        };
    }
}
