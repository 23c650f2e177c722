package io.csiorchestrator.events;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A plugin's capacity in one topology segment, as CSI GetCapacity answers it, and how it travels in the details of a
 * {@code capacity} node event (issue 34): {@code availableBytes}, optional {@code maximumVolumeBytes} and
 * {@code minimumVolumeBytes}, and one {@code segment.<topology key>} per entry of the segment (none: the plugin's
 * volumes are reachable from every node, or it reports no topology).
 *
 * @param segment            the accessible topology segment asked about; empty for "anywhere"
 * @param availableBytes     GetCapacity's available_capacity
 * @param maximumVolumeBytes GetCapacity's maximum_volume_size; null when not given
 * @param minimumVolumeBytes GetCapacity's minimum_volume_size; null when not given
 */
public record CapacityFigures(Map<String, String> segment, long availableBytes, Long maximumVolumeBytes,
                              Long minimumVolumeBytes) {

    public static final String AVAILABLE = "availableBytes";
    public static final String MAXIMUM = "maximumVolumeBytes";
    public static final String MINIMUM = "minimumVolumeBytes";
    public static final String SEGMENT_PREFIX = "segment.";

    public CapacityFigures {
        segment = Copies.map(segment);
    }

    /** The details of a {@code capacity} node event. */
    public Map<String, String> toDetails() {
        Map<String, String> details = new LinkedHashMap<>();
        details.put(AVAILABLE, Long.toString(availableBytes));
        if (maximumVolumeBytes != null) {
            details.put(MAXIMUM, Long.toString(maximumVolumeBytes));
        }
        if (minimumVolumeBytes != null) {
            details.put(MINIMUM, Long.toString(minimumVolumeBytes));
        }
        segment.forEach((key, value) -> details.put(SEGMENT_PREFIX + key, value));
        return details;
    }

    /**
     * The figures of a {@code capacity} node event's details; a missing or non-numeric (or negative) figure is a
     * {@link MalformedEventException} naming the field and its value.
     */
    public static CapacityFigures fromDetails(Map<String, String> details) {
        List<Violation> problems = new ArrayList<>();
        Long available = figure(details, AVAILABLE, true, problems);
        Long maximum = figure(details, MAXIMUM, false, problems);
        Long minimum = figure(details, MINIMUM, false, problems);
        Map<String, String> segment = new LinkedHashMap<>();
        details.forEach((key, value) -> {
            if (key.startsWith(SEGMENT_PREFIX)) {
                if (key.length() == SEGMENT_PREFIX.length()) {
                    problems.add(new Violation("details." + key, Violation.quote(value), "names no topology key"));
                } else {
                    segment.put(key.substring(SEGMENT_PREFIX.length()), value);
                }
            }
        });
        if (!problems.isEmpty()) {
            throw new MalformedEventException(EventType.NODE_EVENT.displayName(), problems);
        }
        return new CapacityFigures(segment, available, maximum, minimum);
    }

    /** A non-negative count in the details; null when absent and not required. */
    static Long figure(Map<String, String> details, String key, boolean required, List<Violation> problems) {
        String text = details.get(key);
        if (text == null) {
            if (required) {
                problems.add(new Violation("details." + key, null, "is required (a number of bytes or inodes)"));
            }
            return null;
        }
        try {
            long value = Long.parseLong(text);
            if (value < 0) {
                problems.add(new Violation("details." + key, Violation.quote(text), "must not be negative"));
                return null;
            }
            return value;
        } catch (NumberFormatException e) {
            problems.add(new Violation("details." + key, Violation.quote(text), "must be a whole number"));
            return null;
        }
    }
}
