package io.csiorchestrator.worker.mount;

import io.csiorchestrator.worker.state.VolumeKey;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The last condition seen of each volume published on this node, and the decision of what to
 * report: the first observation of a volume (so that a consumer that missed a change, or a worker
 * restart, converges), a change between normal and abnormal, and a new message while abnormal. The
 * same condition seen again is not reported. Pure: no plugin call, no event; the poller does both.
 */
public final class VolumeConditions {

    /** A condition to report: {@code since} is when it was first seen. */
    public record Change(VolumeKey key, String pluginId, VolumeCondition condition, Instant since) {
    }

    private final Map<VolumeKey, Change> last = new ConcurrentHashMap<>();

    /** Records what was seen now; returns the change to report, if it is one. */
    public Optional<Change> observe(VolumeKey key, String pluginId, VolumeCondition seen, Instant now) {
        Change previous = last.get(key);
        if (previous != null && previous.condition().abnormal() == seen.abnormal()
                && (!seen.abnormal() || previous.condition().message().equals(seen.message()))) {
            return Optional.empty();
        }
        Change change = new Change(key, pluginId, seen, now);
        last.put(key, change);
        return Optional.of(change);
    }

    /** Forgets the volumes no longer published here (seen again later, they are reported again). */
    public void retainOnly(Set<VolumeKey> published) {
        last.keySet().retainAll(published);
    }

    /** How many volumes were abnormal when last seen. */
    public long abnormal() {
        return last.values().stream().filter(c -> c.condition().abnormal()).count();
    }
}
