package io.csiorchestrator.hostpath.fence;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Every storage fence of the plugin, as one immutable value (the content of {@code fences.json}).
 *
 * @param sequence the last request number handed out
 * @param fences   the fences in force
 */
public record FenceBook(long sequence, List<Fence> fences) {

    public FenceBook {
        fences = List.copyOf(fences == null ? List.of() : fences);
    }

    public static FenceBook empty() {
        return new FenceBook(0, List.of());
    }

    public Optional<Fence> fence(String volumeId, String nodeId) {
        return fences.stream().filter(f -> f.is(volumeId, nodeId)).findFirst();
    }

    public List<Fence> of(String nodeId) {
        return fences.stream().filter(f -> f.nodeId().equals(nodeId)).toList();
    }

    /** Sets (or sets again) the fence of volume from node under a new request number. */
    public FenceBook request(String volumeId, String nodeId, Instant now) {
        long next = sequence + 1;
        List<Fence> list = new ArrayList<>(fences);
        Optional<Fence> old = fence(volumeId, nodeId);
        list.removeIf(f -> f.is(volumeId, nodeId));
        list.add(new Fence(volumeId, nodeId, next, old.map(Fence::applied).orElse(0L),
                old.map(Fence::problem).orElse(null), now.toString()));
        return new FenceBook(next, list);
    }

    public FenceBook lift(String volumeId, String nodeId) {
        List<Fence> list = new ArrayList<>(fences);
        list.removeIf(f -> f.is(volumeId, nodeId));
        return new FenceBook(sequence, list);
    }

    public FenceBook with(Fence fence) {
        List<Fence> list = new ArrayList<>(fences);
        list.removeIf(f -> f.is(fence.volumeId(), fence.nodeId()));
        list.add(fence);
        return new FenceBook(sequence, list);
    }
}
