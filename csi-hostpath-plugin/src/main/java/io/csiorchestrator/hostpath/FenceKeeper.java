package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.hostpath.fence.Fence;
import io.csiorchestrator.hostpath.fence.FenceBook;
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
 * the file, refuses NodeStage/NodePublish of vol from then on and makes its staging and targets of vol
 * read-only ({@code mount -o remount,bind,ro}), then records the answer: enforced, or what it
 * could not make read-only (the kernel refuses while a file is open for writing through the mount; the
 * plugin retries every second). ControllerPublishVolume(vol, X) lifts the fence; mounts it made
 * read-only stay so until they are unpublished/unstaged.
 */
final class FenceKeeper implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(FenceKeeper.class.getName());
    /** How often the watcher looks at the file's version (a stat). */
    static final Duration WATCH_INTERVAL = Duration.ofMillis(100);
    /** How often the fences of this node are checked against the mount table even if the file did not change. */
    static final Duration RECHECK_INTERVAL = Duration.ofSeconds(1);
    private static final Duration ANSWER_POLL = Duration.ofMillis(50);

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
            if (System.nanoTime() - deadlineNanos >= 0) {
                throw io.grpc.Status.UNAVAILABLE.withDescription("the fence of volume " + volumeId + " from node(s) "
                        + waiting + " is recorded, but their plugin did not confirm it in time (is it running?);"
                        + " their mounts of the volume may still be writable").asRuntimeException();
            }
            try {
                Thread.sleep(ANSWER_POLL.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw CsiStatus.aborted("interrupted while waiting for the fence of volume " + volumeId);
            }
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

    /** Starts the watcher thread: enforces this node's fences whenever the file changes, and every second. */
    void start() {
        if (!enabled()) {
            return;
        }
        enforceOwn();
        Thread thread = new Thread(this::watch, "csi-hostpath-fence-watcher");
        thread.setDaemon(true);
        watcher = thread;
        thread.start();
    }

    private void watch() {
        Object seen = store.version();
        long lastCheck = System.nanoTime();
        while (!Thread.currentThread().isInterrupted()) {
            try {
                Thread.sleep(WATCH_INTERVAL.toMillis());
                Object version = store.version();
                boolean due = System.nanoTime() - lastCheck >= RECHECK_INTERVAL.toNanos();
                if (!version.equals(seen) || due) {
                    seen = version;
                    lastCheck = System.nanoTime();
                    if (!store.load().of(options.nodeId()).isEmpty()) {
                        enforceOwn();
                    }
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                LOG.warning("fence watcher: " + e.getMessage());
            }
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
