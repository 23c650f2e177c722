package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.hostpath.fence.Fence;
import io.csiorchestrator.hostpath.fence.FenceBook;
import io.csiorchestrator.hostpath.fence.FenceFileWatch;
import io.csiorchestrator.hostpath.fence.FenceStore;
import io.csiorchestrator.hostpath.mount.Mounter;
import io.csiorchestrator.hostpath.state.PluginState;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The storage fence of {@code --fence-on-controller-unpublish}. ControllerUnpublishVolume(vol, X)
 * records a fence of vol from X in {@code fences.json} (beside the controller state, so every process
 * of the plugin on this machine sees it) and waits for X's plugin to answer. X's plugin, which watches
 * the file (kernel file notifications, {@link FenceFileWatch}: nothing runs while the file does not change),
 * refuses NodeStage/NodePublish of vol from then on and makes its staging and targets of vol
 * read-only ({@code mount -o remount,bind,ro}), then records the answer: enforced, or what it
 * could not make read-only (the kernel refuses while a file is open for writing through the mount; the
 * plugin retries every second while its node has a fence). ControllerPublishVolume(vol, X) lifts the fence;
 * mounts it made read-only stay so until they are unpublished/unstaged.
 */
final class FenceKeeper implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(FenceKeeper.class.getName());
    /**
     * How often this node's fences are enforced again while it has any, even if the file did not change (a mount that
     * was busy may be made read-only now). A node without a fence waits for the file to change, without limit.
     */
    static final Duration RECHECK_INTERVAL = Duration.ofSeconds(1);

    private final PluginOptions options;
    private final PluginStateHolder state;
    private final FenceStore store;
    private final Supplier<MountTable> mountTable;
    private final Mounter mounter;
    private volatile Thread watcher;

    FenceKeeper(PluginOptions options, PluginStateHolder state, FenceStore store, Supplier<MountTable> mountTable,
                Mounter mounter) {
        this.options = options;
        this.state = state;
        this.store = store;
        this.mountTable = mountTable;
        this.mounter = mounter;
    }

    boolean enabled() {
        return options.fenceOnControllerUnpublish();
    }

    /** Refuses a NodeStage/NodePublish of a volume fenced from this node (call under the state lock). */
    void requireNotFenced(String volumeId) {
        if (enabled() && store.load().fence(volumeId, options.nodeId()).isPresent()) {
            throw CsiStatus.failedPrecondition("volume " + volumeId + " is fenced from node " + options.nodeId()
                    + " (ControllerUnpublishVolume; ControllerPublishVolume lifts it)");
        }
    }

    /** Records the fence of the volume from each node (call under the state lock); the request numbers by node. */
    Map<String, Long> request(String volumeId, Set<String> nodeIds) {
        FenceBook book = store.load();
        Map<String, Long> requests = new java.util.LinkedHashMap<>();
        for (String nodeId : nodeIds) {
            book = book.request(volumeId, nodeId, Instant.now());
            requests.put(nodeId, book.sequence());
        }
        if (!nodeIds.isEmpty()) {
            store.save(book);
            LOG.info("fenced volume " + volumeId + " from node(s) " + nodeIds + "; waiting for their plugins");
        }
        return requests;
    }

    /** Lifts the fence of the volume from the node (call under the state lock). */
    void lift(String volumeId, String nodeId) {
        FenceBook book = store.load();
        if (book.fence(volumeId, nodeId).isPresent()) {
            store.save(book.lift(volumeId, nodeId));
            LOG.info("lifted the fence of volume " + volumeId + " from node " + nodeId);
        }
    }

    /**
     * Waits (outside the state lock) until each node's plugin answered its request: OK when every one
     * enforced it; FAILED_PRECONDITION when one could not make every mount read-only; UNAVAILABLE when one
     * did not answer by {@code deadlineNanos} ({@link System#nanoTime()}; its plugin not running, say). Neither
     * failure is a fence.
     */
    void awaitEnforced(String volumeId, Map<String, Long> requests, long deadlineNanos) {
        if (requests.containsKey(options.nodeId())) {
            enforceOwn();
        }
        List<String> waiting = new ArrayList<>(requests.keySet());
        try (FenceFileWatch changes = FenceFileWatch.open(store.file())) {
            while (true) {
                FenceBook book = store.load();
                for (var it = waiting.iterator(); it.hasNext(); ) {
                    String nodeId = it.next();
                    Optional<Fence> fence = book.fence(volumeId, nodeId);
                    if (fence.isEmpty()) {
                        throw CsiStatus.aborted("the fence of volume " + volumeId + " from node " + nodeId
                                + " was lifted (ControllerPublishVolume) before node " + nodeId + "'s plugin enforced it");
                    }
                    if (fence.get().applied() >= requests.get(nodeId)) {
                        if (fence.get().problem() != null) {
                            throw CsiStatus.failedPrecondition("volume " + volumeId + " is fenced from node " + nodeId
                                    + " for new stages and publishes, but not every mount of it there is read-only: "
                                    + fence.get().problem() + "; this is not a complete fence");
                        }
                        it.remove();
                    }
                }
                if (waiting.isEmpty()) {
                    return;
                }
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    throw io.grpc.Status.UNAVAILABLE.withDescription("the fence of volume " + volumeId + " from node(s) "
                            + waiting + " is recorded, but their plugin did not confirm it in time (is it running?);"
                            + " their mounts of the volume may still be writable").asRuntimeException();
                }
                // the answers are written to the same file: wait for it to change (or the deadline), then read again
                changes.awaitChange(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw CsiStatus.aborted("interrupted while waiting for the fence of volume " + volumeId);
        }
    }

    /**
     * Enforces every fence of this node: its staging and targets of each fenced volume are made read-only; the answer (enforced, or the problem) is recorded for the request. Takes the state lock.
     */
    void enforceOwn() {
        state.locked(holder -> {
            FenceBook book = store.load();
            FenceBook next = book;
            for (Fence fence : book.of(options.nodeId())) {
                String problem = makeReadOnly(fence.volumeId(), holder.current());
                if (fence.applied() != fence.requested() || !Objects.equals(problem, fence.problem())) {
                    next = next.with(fence.answeredWith(fence.requested(), problem));
                    LOG.info(problem == null
                            ? "fence of volume " + fence.volumeId() + " enforced: every mount of it on this node is read-only"
                            : "fence of volume " + fence.volumeId() + " not complete: " + problem);
                }
            }
            if (!next.equals(book)) {
                store.save(next);
            }
            return null;
        });
    }

    /**
     * Makes this node's mounts of the volume read-only: its staging and its targets as this plugin recorded
     * them (several nodes' plugins may share one machine's mount table, as in the tests and {@code ./csi up}, so
     * the mount table alone does not say whose a mount is). Null when all are read-only, else what is not.
     */
    private String makeReadOnly(String volumeId, PluginState current) {
        MountTable table = mountTable.get();
        Set<String> points = new LinkedHashSet<>();
        Optional.ofNullable(current.stagings().get(volumeId)).ifPresent(staging -> points.add(staging.stagingPath()));
        current.nodePublicationsOf(volumeId).forEach(publication -> points.add(publication.targetPath()));
        List<String> problems = new ArrayList<>();
        for (String point : points) {
            Optional<MountInfo> top = table.mountAt(Path.of(point));
            if (top.isEmpty() || !isOf(top.get(), volumeId) || top.get().readOnly()) {
                continue;
            }
            try {
                mounter.remountReadOnly(Path.of(point));
                LOG.info("fence: made " + point + " (volume " + volumeId + ") read-only");
            } catch (IOException e) {
                String message = e.getMessage();
                problems.add(point + " is still writable (" + message + ")"
                        + (message != null && message.contains("busy") ? ": a file is open for writing through it" : ""));
            }
        }
        return problems.isEmpty() ? null : String.join("; ", problems);
    }

    /** A mount of the volume: its root is the volume's directory (a bind mount of it or of its staging). */
    private static boolean isOf(MountInfo mount, String volumeId) {
        return mount.root().endsWith("/volumes/" + volumeId);
    }

    /**
     * Starts the watcher thread: enforces this node's fences whenever the file changes, and every
     * {@link #RECHECK_INTERVAL} while this node has a fence.
     */
    void start() {
        if (!enabled()) {
            return;
        }
        FenceFileWatch changes = FenceFileWatch.open(store.file()); // before the first read: no change is missed
        try {
            enforceOwn();
        } catch (RuntimeException e) {
            changes.close();
            throw e;
        }
        Thread thread = new Thread(() -> watch(changes), "csi-hostpath-fence-watcher");
        thread.setDaemon(true);
        watcher = thread;
        thread.start();
    }

    private void watch(FenceFileWatch changes) {
        try (changes) {
            boolean own = true; // start() enforced once; look again after the recheck interval
            while (true) {
                changes.awaitChange(own ? RECHECK_INTERVAL.toNanos() : -1);
                try {
                    own = !store.load().of(options.nodeId()).isEmpty();
                    if (own) {
                        enforceOwn();
                    }
                } catch (RuntimeException e) {
                    own = true; // try again after the recheck interval, not only on the next change
                    LOG.warning("fence watcher: " + e.getMessage());
                }
            }
        } catch (InterruptedException e) {
            // closed
        } catch (RuntimeException e) {
            LOG.warning("fence watcher stopped: " + e.getMessage());
        }
    }

    @Override
    public void close() {
        Thread thread = watcher;
        if (thread != null) {
            thread.interrupt();
        }
    }
}
