package io.csiorchestrator.hostpath;

import io.csiorchestrator.hostpath.state.PluginState;
import io.csiorchestrator.hostpath.state.StateStore;

import java.util.function.Function;

/**
 * The plugin's current state and the one lock every CSI operation holds: the hostpath plugin
 * handles one operation at a time, mounts included. A change is saved before it takes effect.
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
        return operation.apply(this);
    }

    synchronized PluginState current() {
        return state;
    }

    synchronized void commit(PluginState next) {
        store.save(next);
        state = next;
    }
}
