package io.csiorchestrator.hostpath;

import io.csiorchestrator.hostpath.state.PluginState;
import io.csiorchestrator.hostpath.state.StateStore;

import java.nio.channels.FileLock;
import java.util.function.Function;

/**
 * The plugin's current state and the one lock every CSI operation holds: the hostpath plugin
 * handles one operation at a time, mounts included. A change is saved before it takes effect.
 * With a shared dir, the lock is also the shared dir's file lock, and each operation starts from
 * the state as saved, since another node's plugin may have changed the controller half (read again only
 * when it did: {@link StateStore#refresh}).
 */
final class PluginStateHolder {

    private final StateStore store;
    private PluginState state;

    PluginStateHolder(StateStore store) {
        this.store = store;
        this.state = store.load();
    }

    /** Runs an operation under the lock; it reads {@link #current()} and saves with {@link #commit}. */
    synchronized <T> T locked(Function<PluginStateHolder, T> operation) {
        if (!store.shared()) {
            return operation.apply(this);
        }
        FileLock lock = store.lockShared();
        try {
            state = store.refresh(state);
            return operation.apply(this);
        } finally {
            store.unlock(lock);
        }
    }

    synchronized PluginState current() {
        return state;
    }

    synchronized void commit(PluginState next) {
        store.save(state, next);
        state = next;
    }

    /** At the plugin's stop, after its last operation: closes the store's open file (the node journal's). */
    synchronized void close() {
        store.close();
    }
}
