package io.csiorchestrator.events;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A published volume's usage as CSI NodeGetVolumeStats reports it (the BYTES and INODES usages, each figure
 * optional as in CSI), and how it travels in the details of a {@code volume-usage} node event (issue 34):
 * {@code bytesTotal}, {@code bytesAvailable}, {@code bytesUsed}, {@code inodesTotal}, {@code inodesFree},
 * {@code inodesUsed}; a figure the plugin did not report is absent. Named after kubelet's
 * {@code kubelet_volume_stats_*} (capacity, available, used; inodes, inodes_free, inodes_used).
 */
public record VolumeUsageFigures(Long bytesTotal, Long bytesAvailable, Long bytesUsed, Long inodesTotal,
                                 Long inodesFree, Long inodesUsed) {

    public static final String BYTES_TOTAL = "bytesTotal";
    public static final String BYTES_AVAILABLE = "bytesAvailable";
    public static final String BYTES_USED = "bytesUsed";
    public static final String INODES_TOTAL = "inodesTotal";
    public static final String INODES_FREE = "inodesFree";
    public static final String INODES_USED = "inodesUsed";

    /** Whether no figure is known. */
    public boolean empty() {
        return bytesTotal == null && bytesAvailable == null && bytesUsed == null && inodesTotal == null
                && inodesFree == null && inodesUsed == null;
    }

    /** The details of a {@code volume-usage} node event. */
    public Map<String, String> toDetails() {
        Map<String, String> details = new LinkedHashMap<>();
        put(details, BYTES_TOTAL, bytesTotal);
        put(details, BYTES_AVAILABLE, bytesAvailable);
        put(details, BYTES_USED, bytesUsed);
        put(details, INODES_TOTAL, inodesTotal);
        put(details, INODES_FREE, inodesFree);
        put(details, INODES_USED, inodesUsed);
        return details;
    }

    /**
     * The figures of a {@code volume-usage} node event's details: at least one; a non-numeric or negative one is a
     * {@link MalformedEventException} naming the field and its value.
     */
    public static VolumeUsageFigures fromDetails(Map<String, String> details) {
        List<Violation> problems = new ArrayList<>();
        VolumeUsageFigures figures = new VolumeUsageFigures(
                CapacityFigures.figure(details, BYTES_TOTAL, false, problems),
                CapacityFigures.figure(details, BYTES_AVAILABLE, false, problems),
                CapacityFigures.figure(details, BYTES_USED, false, problems),
                CapacityFigures.figure(details, INODES_TOTAL, false, problems),
                CapacityFigures.figure(details, INODES_FREE, false, problems),
                CapacityFigures.figure(details, INODES_USED, false, problems));
        if (problems.isEmpty() && figures.empty()) {
            problems.add(new Violation("details", null, "a volume-usage event carries at least one of "
                    + String.join(", ", BYTES_TOTAL, BYTES_AVAILABLE, BYTES_USED, INODES_TOTAL, INODES_FREE, INODES_USED)));
        }
        if (!problems.isEmpty()) {
            throw new MalformedEventException(EventType.NODE_EVENT.displayName(), problems);
        }
        return figures;
    }

    private static void put(Map<String, String> details, String key, Long value) {
        if (value != null) {
            details.put(key, Long.toString(value));
        }
    }
}
