package io.csiorchestrator.worker.lease;

import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * What a fence must unmount (issue 19), from the worker's records: per volume, the target path of every publication
 * whose mount command said {@code fenceOnLapse} (in any state: {@code PUBLISHING} and {@code UNPUBLISHING} may be
 * mounted too), and the volume's staging path when no other publication (one not fenced) keeps it and the record
 * says it is (maybe) staged. Publications not fenced on a lapse, and their volumes' staging, are kept. Pure: no I/O.
 *
 * <p>The worker's self-fence unmounts exactly these; the guard process is fed {@link #paths()} (targets first, then
 * stagings: a staging is unmounted after the targets bound from it).
 */
public record FencePlan(List<Volume> volumes) {

    /** One publication to unmount: its allocation and target path. */
    public record Target(String allocationId, String path) {
    }

    /**
     * One volume's part of the fence.
     *
     * @param stagingPath the staging path to unmount, or null when it stays (another publication keeps it, or the
     *                    volume is not staged)
     */
    public record Volume(VolumeKey key, String pluginId, String externalVolumeId, List<Target> targets,
                         String stagingPath) {
        public Volume {
            targets = List.copyOf(targets);
        }
    }

    public FencePlan {
        volumes = List.copyOf(volumes);
    }

    /** The plan for {@code records} (ordered by namespace, then volume id, then allocation id). */
    public static FencePlan of(Collection<VolumeRecord> records) {
        List<Volume> volumes = new ArrayList<>();
        for (VolumeRecord record : records) {
            List<Target> targets = new ArrayList<>();
            boolean keptByOthers = false;
            for (Usage usage : record.users()) {
                if (usage.fencesOnLapse()) {
                    targets.add(new Target(usage.allocationId(), usage.targetPath()));
                } else {
                    keptByOthers = true;
                }
            }
            if (targets.isEmpty()) {
                continue;
            }
            targets.sort(Comparator.comparing(Target::allocationId));
            String staging = !keptByOthers && record.stage() != StageState.UNSTAGED ? record.stagingPath() : null;
            volumes.add(new Volume(record.key(), record.pluginId(), record.externalVolumeId(), targets, staging));
        }
        volumes.sort(Comparator.comparing((Volume v) -> v.key().namespace()).thenComparing(v -> v.key().volumeId()));
        return new FencePlan(volumes);
    }

    public boolean isEmpty() {
        return volumes.isEmpty();
    }

    /** Every path to unmount: all target paths first, then the staging paths. */
    public List<String> paths() {
        List<String> paths = new ArrayList<>();
        volumes.forEach(v -> v.targets().forEach(t -> paths.add(t.path())));
        volumes.stream().map(Volume::stagingPath).filter(p -> p != null).forEach(paths::add);
        return paths;
    }
}
