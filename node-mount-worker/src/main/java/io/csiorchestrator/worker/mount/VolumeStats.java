package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.v1.NodeGetVolumeStatsResponse;
import io.csiorchestrator.csi.v1.VolumeUsage;
import io.csiorchestrator.events.VolumeUsageFigures;
import java.util.Optional;

/**
 * One NodeGetVolumeStats answer: the volume's usage and, where the plugin reports it, its condition (issue 34).
 *
 * @param usage     the BYTES and INODES figures the plugin gave (each null when absent)
 * @param condition the volume's condition; empty when the answer carries none
 */
public record VolumeStats(VolumeUsageFigures usage, Optional<VolumeCondition> condition) {

    /**
     * The stats of a CSI answer. CSI's usage figures are optional (0 may mean unset): a unit the answer does not list
     * is absent, and within a listed unit a total of 0 with nothing used or available is taken as not reported.
     */
    public static VolumeStats of(NodeGetVolumeStatsResponse response) {
        VolumeUsage bytes = null;
        VolumeUsage inodes = null;
        for (VolumeUsage u : response.getUsageList()) {
            if (u.getUnit() == VolumeUsage.Unit.BYTES && bytes == null) {
                bytes = u;
            } else if (u.getUnit() == VolumeUsage.Unit.INODES && inodes == null) {
                inodes = u;
            }
        }
        bytes = reported(bytes);
        inodes = reported(inodes);
        VolumeUsageFigures usage = new VolumeUsageFigures(
                bytes == null ? null : Math.max(0, bytes.getTotal()),
                bytes == null ? null : Math.max(0, bytes.getAvailable()),
                bytes == null ? null : Math.max(0, bytes.getUsed()),
                inodes == null ? null : Math.max(0, inodes.getTotal()),
                inodes == null ? null : Math.max(0, inodes.getAvailable()),
                inodes == null ? null : Math.max(0, inodes.getUsed()));
        Optional<VolumeCondition> condition = response.hasVolumeCondition()
                ? Optional.of(new VolumeCondition(response.getVolumeCondition().getAbnormal(),
                        response.getVolumeCondition().getMessage()))
                : Optional.empty();
        return new VolumeStats(usage, condition);
    }

    private static VolumeUsage reported(VolumeUsage usage) {
        return usage == null || (usage.getTotal() == 0 && usage.getUsed() == 0 && usage.getAvailable() == 0)
                ? null : usage;
    }
}
