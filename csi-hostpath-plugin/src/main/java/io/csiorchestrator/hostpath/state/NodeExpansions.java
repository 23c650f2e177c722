package io.csiorchestrator.hostpath.state;

import java.util.Collections;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * This node's NodeExpandVolume results: volume id -> the size its "file system" was expanded to here.
 *
 * @param sizes volume id -> bytes
 */
public record NodeExpansions(SortedMap<String, Long> sizes) {

    public NodeExpansions {
        sizes = Collections.unmodifiableSortedMap(new TreeMap<>(sizes == null ? Map.of() : sizes));
    }

    public static NodeExpansions empty() {
        return new NodeExpansions(null);
    }

    public NodeExpansions with(String volumeId, long bytes) {
        TreeMap<String, Long> next = new TreeMap<>(sizes);
        next.put(volumeId, bytes);
        return new NodeExpansions(next);
    }
}
