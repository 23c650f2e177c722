package io.csiorchestrator.worker.state;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import io.csiorchestrator.events.MountDone;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What this node knows of one volume, persisted by {@link MountRecordStore}: the usage set (every
 * allocation using it, with its target path and read-only flag), the one staging path and its
 * state, the controller publications made from this node, and the results of the last commands
 * (so that a redelivered command is answered without a second plugin call).
 *
 * <p>Immutable; every change returns a new record. The decisions of reference counting live here:
 * stage only when not staged, unstage only when the last user is gone.
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record VolumeRecord(
        String namespace,
        String volumeId,
        String pluginId,
        String externalVolumeId,
        String stagingPath,
        StageState stage,
        Map<String, Usage> usages,
        Map<String, Map<String, String>> controllerPublications,
        List<MountDone> results,
        Instant updatedAt) {

    /** How many command results are kept per volume for idempotent redelivery. */
    public static final int MAX_RESULTS = 64;

    public VolumeRecord {
        stage = stage == null ? StageState.UNSTAGED : stage;
        usages = usages == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(usages));
        controllerPublications = controllerPublications == null ? Map.of()
                : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(controllerPublications));
        results = results == null ? List.of() : List.copyOf(results);
    }

    public static VolumeRecord empty(VolumeKey key, String pluginId, String externalVolumeId, String stagingPath) {
        return new VolumeRecord(key.namespace(), key.volumeId(), pluginId, externalVolumeId, stagingPath,
                StageState.UNSTAGED, Map.of(), Map.of(), List.of(), Instant.now());
    }

    @JsonIgnore
    public VolumeKey key() {
        return new VolumeKey(namespace, volumeId);
    }

    public Optional<MountDone> resultFor(String commandId) {
        for (int i = results.size() - 1; i >= 0; i--) {
            if (results.get(i).commandId().equals(commandId)) {
                return Optional.of(results.get(i));
            }
        }
        return Optional.empty();
    }

    public Optional<Usage> usage(String allocationId) {
        return Optional.ofNullable(usages.get(allocationId));
    }

    /** Whether a publish needs the volume staged first: the plugin stages and it is not staged. */
    public boolean stageNeeded(boolean pluginStages) {
        return pluginStages && stage != StageState.STAGED;
    }

    /** Whether the volume may be unstaged: nobody uses it on this node and it is (maybe) staged. */
    public boolean unstageAllowed() {
        return usages.isEmpty() && stage != StageState.UNSTAGED;
    }

    /** Whether {@code allocationId} is the only user left. */
    public boolean isLastUser(String allocationId) {
        return usages.size() == 1 && usages.containsKey(allocationId);
    }

    /** Whether the record holds nothing but results: no usage, no staging, no controller publication. */
    @JsonIgnore
    public boolean idle() {
        return usages.isEmpty() && stage == StageState.UNSTAGED && controllerPublications.isEmpty();
    }

    public VolumeRecord withUsage(Usage usage) {
        Map<String, Usage> next = new LinkedHashMap<>(usages);
        next.put(usage.allocationId(), usage);
        return new VolumeRecord(namespace, volumeId, pluginId, externalVolumeId, stagingPath, stage, next,
                controllerPublications, results, Instant.now());
    }

    public VolumeRecord withoutUsage(String allocationId) {
        Map<String, Usage> next = new LinkedHashMap<>(usages);
        next.remove(allocationId);
        return new VolumeRecord(namespace, volumeId, pluginId, externalVolumeId, stagingPath, stage, next,
                controllerPublications, results, Instant.now());
    }

    public VolumeRecord withStage(StageState newStage) {
        return new VolumeRecord(namespace, volumeId, pluginId, externalVolumeId, stagingPath, newStage, usages,
                controllerPublications, results, Instant.now());
    }

    public VolumeRecord withPlugin(String newPluginId, String newExternalVolumeId) {
        return new VolumeRecord(namespace, volumeId, newPluginId, newExternalVolumeId, stagingPath, stage, usages,
                controllerPublications, results, Instant.now());
    }

    public VolumeRecord withControllerPublication(String externalNodeId, Map<String, String> publishContext) {
        Map<String, Map<String, String>> next = new LinkedHashMap<>(controllerPublications);
        next.put(externalNodeId, publishContext == null ? Map.of() : Map.copyOf(publishContext));
        return new VolumeRecord(namespace, volumeId, pluginId, externalVolumeId, stagingPath, stage, usages, next,
                results, Instant.now());
    }

    public VolumeRecord withoutControllerPublication(String externalNodeId) {
        Map<String, Map<String, String>> next = new LinkedHashMap<>(controllerPublications);
        next.remove(externalNodeId);
        return new VolumeRecord(namespace, volumeId, pluginId, externalVolumeId, stagingPath, stage, usages, next,
                results, Instant.now());
    }

    /** This record with {@code result} remembered (the oldest forgotten beyond {@value #MAX_RESULTS}). */
    public VolumeRecord withResult(MountDone result) {
        List<MountDone> next = new ArrayList<>(results.size() + 1);
        for (MountDone r : results) {
            if (!r.commandId().equals(result.commandId())) {
                next.add(r);
            }
        }
        next.add(result);
        while (next.size() > MAX_RESULTS) {
            next.remove(0);
        }
        return new VolumeRecord(namespace, volumeId, pluginId, externalVolumeId, stagingPath, stage, usages,
                controllerPublications, next, Instant.now());
    }

    /** This record without its command results, as {@link MountRecordStore} writes the rest of it. */
    VolumeRecord withoutResults() {
        return new VolumeRecord(namespace, volumeId, pluginId, externalVolumeId, stagingPath, stage, usages,
                controllerPublications, List.of(), updatedAt);
    }

    public Collection<Usage> users() {
        return usages.values();
    }
}
