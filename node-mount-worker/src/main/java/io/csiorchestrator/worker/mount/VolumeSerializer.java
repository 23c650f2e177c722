package io.csiorchestrator.worker.mount;

import io.csiorchestrator.worker.state.VolumeKey;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * At most one operation in flight per volume: tasks for one volume run one after the other in
 * submission order; tasks for different volumes run concurrently on the executor.
 */
public final class VolumeSerializer {

    private final Executor executor;
    private final Map<VolumeKey, CompletableFuture<?>> tails = new HashMap<>();

    public VolumeSerializer(Executor executor) {
        this.executor = executor;
    }

    public synchronized <T> CompletableFuture<T> submit(VolumeKey key, Supplier<T> task) {
        CompletableFuture<?> previous = tails.getOrDefault(key, CompletableFuture.completedFuture(null));
        CompletableFuture<T> next = previous.handle((ignored, failure) -> null)
                .thenApplyAsync(ignored -> task.get(), executor);
        tails.put(key, next);
        next.whenComplete((ignored, failure) -> {
            synchronized (this) {
                tails.remove(key, next);
            }
        });
        return next;
    }

    public synchronized int busyVolumes() {
        return tails.size();
    }
}
