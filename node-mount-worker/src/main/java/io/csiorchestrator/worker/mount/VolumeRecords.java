package io.csiorchestrator.worker.mount;

import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * This node's volume records: in memory as the worker's steps left them, on disk ({@link MountRecordStore}) as far as
 * they were {@linkplain #save saved}. A {@linkplain #checkpoint checkpoint} keeps a state in memory only, until the
 * volume's next save.
 */
final class VolumeRecords implements ControllerSteps.Records {

    private final MountRecordStore store;
    private final Map<VolumeKey, VolumeRecord> records = new ConcurrentHashMap<>();
    /** Volumes whose record here has a {@link #checkpoint} not yet written. */
    private final Set<VolumeKey> unsaved = ConcurrentHashMap.newKeySet();

    VolumeRecords(MountRecordStore store) {
        this.store = store;
    }

    /** Loads every record from disk; returns the problems (unreadable records set aside). */
    List<String> load() throws IOException {
        MountRecordStore.Loaded loaded = store.loadAll();
        records.clear();
        records.putAll(loaded.records());
        return loaded.problems();
    }

    @Override
    public VolumeRecord get(VolumeKey key) {
        return records.get(key);
    }

    Optional<VolumeRecord> record(VolumeKey key) {
        return Optional.ofNullable(records.get(key));
    }

    Map<VolumeKey, VolumeRecord> all() {
        return Map.copyOf(records);
    }

    /** The volumes that hold something on this node (a usage, a staging) through {@code pluginId}. */
    List<VolumeKey> volumesOf(String pluginId) {
        List<VolumeKey> keys = new ArrayList<>();
        records.forEach((key, record) -> {
            if (record.pluginId().equals(pluginId) && (!record.usages().isEmpty() || record.stage() != StageState.UNSTAGED)) {
                keys.add(key);
            }
        });
        return keys;
    }

    /** Writes {@code record} durably, with whatever was checkpointed before it. */
    @Override
    public VolumeRecord save(VolumeRecord record) throws IOException {
        store.save(record);
        records.put(record.key(), record);
        unsaved.remove(record.key());
        return record;
    }

    /**
     * A state reached after a plugin call, kept in memory only: the next {@link #save} of the volume (at the latest
     * the write of the command's result, before the answer is sent) writes it with what follows. Only for states whose
     * loss at a crash is safe: the record on disk then still says the step is in progress (STAGING, PUBLISHING,
     * UNPUBLISHING, UNSTAGING, or no controller publication yet), and the restart's convergence repeats the idempotent
     * call. Saves two fsyncs a checkpoint (the file and its directory).
     */
    @Override
    public VolumeRecord checkpoint(VolumeRecord record) {
        records.put(record.key(), record);
        unsaved.add(record.key());
        return record;
    }

    /** The volume's record here holds a checkpoint not yet written. */
    boolean unsaved(VolumeKey key) {
        return unsaved.contains(key);
    }
}
