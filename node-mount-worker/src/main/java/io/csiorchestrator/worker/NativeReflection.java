package io.csiorchestrator.worker;

import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * The classes Jackson reads and writes that Quarkus does not find on its own, registered for a
 * native image: the worker's crash-safe record ({@code records/<ns>/<volume>.json}) and what it
 * holds. The contract's records and enums inside it (MountDone, AccessMode, SealedSecrets...) are
 * registered by events-schema's reflect-config.json. NativeReflectionTest walks VolumeRecord and
 * fails when a worker class in it is missing here.
 */
@RegisterForReflection(targets = {
        VolumeRecord.class,
        Usage.class,
        StageState.class,
        PublishState.class,
        io.csiorchestrator.worker.state.FenceRecord.class,
        io.csiorchestrator.worker.state.FenceRecord.Phase.class,
})
public final class NativeReflection {

    private NativeReflection() {
    }
}
