package io.csiorchestrator.worker.plugin;

import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.worker.EventSink;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * Discovers the plugins of this node in {@code csi.worker.plugins-dir}: each folder
 * {@code <plugin-id>/} holding a socket {@code csi.sock} is a plugin (like kubelet's plugin
 * registration directory). A WatchService on the directory and on each plugin folder triggers an
 * immediate rescan; a periodic rescan is the fallback (network file systems, missed events). A
 * socket that appears gets a {@link PluginSupervisor}; one that disappears deregisters its plugin.
 *
 * <p>A socket that stays unreachable (its process is gone, the file is left behind) for longer than
 * {@code deregisterAfter} deregisters its plugin too, like Nomad's plugin manager: a last unhealthy fingerprint
 * marked {@code deregistered} (the registry deletes the instance) and a PLUGIN_DEREGISTERED node event; that socket
 * file is then ignored until it is replaced (a restarted plugin binds a new one) or removed.
 */
public final class PluginWatcher implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(PluginWatcher.class);
    public static final String SOCKET = "csi.sock";

    /** Makes the supervisor of a newly found plugin. */
    @FunctionalInterface
    public interface SupervisorFactory {
        PluginSupervisor create(String pluginId, Path socket, PluginSettings settings);
    }

    private final Path pluginsDir;
    private final String nodeId;
    private final PluginRegistry registry;
    private final SupervisorFactory factory;
    private final ScheduledExecutorService scheduler;
    private final java.util.concurrent.Executor probeExecutor;
    private final Duration probeInterval;
    private final Duration heartbeatInterval;
    private final Duration rescanInterval;
    private final Duration deregisterAfter;
    private final EventSink sink;
    private final Clock clock;
    private final Map<String, ScheduledFuture<?>[]> tasks = new HashMap<>();
    private final Set<Path> watched = new HashSet<>();
    /** Sockets of plugins deregistered as unreachable, by plugin id: ignored while the same file is there. */
    private final Map<String, SocketFile> deadSockets = new HashMap<>();
    private WatchService watchService;
    private Thread watchThread;
    private ScheduledFuture<?> rescanTask;
    private volatile boolean closed;

    public PluginWatcher(Path pluginsDir, String nodeId, PluginRegistry registry, SupervisorFactory factory,
                         ScheduledExecutorService scheduler, java.util.concurrent.Executor probeExecutor,
                         Duration probeInterval, Duration heartbeatInterval, Duration rescanInterval,
                         Duration deregisterAfter, EventSink sink, Clock clock) {
        this.deregisterAfter = deregisterAfter;
        this.probeExecutor = probeExecutor;
        this.pluginsDir = pluginsDir;
        this.nodeId = nodeId;
        this.registry = registry;
        this.factory = factory;
        this.scheduler = scheduler;
        this.probeInterval = probeInterval;
        this.heartbeatInterval = heartbeatInterval;
        this.rescanInterval = rescanInterval;
        this.sink = sink;
        this.clock = clock;
    }

    public void start() throws IOException {
        Files.createDirectories(pluginsDir);
        watchService = FileSystems.getDefault().newWatchService();
        register(pluginsDir);
        rescan();
        rescanTask = scheduler.scheduleWithFixedDelay(this::safeRescan, rescanInterval.toMillis(),
                rescanInterval.toMillis(), TimeUnit.MILLISECONDS);
        watchThread = new Thread(this::watchLoop, "csi-plugin-watcher");
        watchThread.setDaemon(true);
        watchThread.start();
    }

    private void watchLoop() {
        while (!closed) {
            try {
                WatchKey key = watchService.poll(rescanInterval.toMillis(), TimeUnit.MILLISECONDS);
                if (key == null) {
                    continue;
                }
                key.pollEvents();
                if (!key.reset()) {
                    synchronized (this) {
                        watched.remove((Path) key.watchable());
                    }
                }
                safeRescan();
            } catch (InterruptedException | ClosedWatchServiceException e) {
                return;
            }
        }
    }

    private void safeRescan() {
        try {
            rescan();
        } catch (RuntimeException | IOException e) {
            LOG.warnf("rescanning %s failed: %s", pluginsDir, e.getMessage());
        }
    }

    /** Registers plugins whose socket appeared and deregisters those whose socket is gone. */
    public synchronized void rescan() throws IOException {
        if (closed) {
            return;
        }
        Map<String, Path> found = new HashMap<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(pluginsDir)) {
            for (Path dir : dirs) {
                if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                    continue;
                }
                String id = dir.getFileName().toString();
                if (!PathSafeId.isValid(id)) {
                    LOG.warnf("ignoring plugin folder %s: invalid plugin id (%s)", dir, PathSafeId.problem(id).orElse(""));
                    continue;
                }
                register(dir);
                Path socket = dir.resolve(SOCKET);
                if (isSocket(socket)) {
                    found.put(id, socket);
                }
            }
        }
        deadSockets.keySet().removeIf(id -> !found.containsKey(id));
        for (Map.Entry<String, SocketFile> dead : Map.copyOf(deadSockets).entrySet()) {
            if (dead.getValue().equals(SocketFile.of(found.get(dead.getKey())))) {
                found.remove(dead.getKey()); // the same dead file: stays deregistered
            } else {
                LOG.infof("socket of CSI plugin %s was replaced; registering it again", dead.getKey());
                deadSockets.remove(dead.getKey());
            }
        }
        for (PluginSupervisor s : registry.all()) {
            if (!found.containsKey(s.pluginId())) {
                deregister(s.pluginId(), "socket " + s.socket() + " disappeared");
            }
        }
        for (Map.Entry<String, Path> e : found.entrySet()) {
            if (registry.get(e.getKey()).isEmpty()) {
                registerPlugin(e.getKey(), e.getValue());
            }
        }
    }

    private void registerPlugin(String pluginId, Path socket) {
        PluginSettings settings;
        try {
            settings = PluginSettings.read(socket.getParent());
        } catch (IllegalArgumentException e) {
            LOG.errorf("plugin %s not registered: %s", pluginId, e.getMessage());
            return;
        }
        PluginSupervisor supervisor = factory.create(pluginId, socket, settings);
        registry.put(supervisor);
        LOG.infof("found CSI plugin %s at %s", pluginId, socket);
        sink.publish(new NodeEvent(nodeId, null, NodeEventKind.PLUGIN_REGISTERED, "Plugin " + pluginId + " registered",
                pluginId, null, null, null, true, null, Map.of("socket", socket.toString()), clock.instant()));
        // the scheduler only triggers; the (blocking) probe runs on its own executor, so a hung
        // plugin never delays the others, the heartbeats or the rescans
        ScheduledFuture<?> probe = scheduler.scheduleWithFixedDelay(() -> {
            if (!deregisterIfUnreachable(supervisor)) {
                supervisor.checkOn(probeExecutor);
            }
        }, 0, probeInterval.toMillis(), TimeUnit.MILLISECONDS);
        ScheduledFuture<?> heartbeat = scheduler.scheduleAtFixedRate(supervisor::heartbeat,
                heartbeatInterval.toMillis(), heartbeatInterval.toMillis(), TimeUnit.MILLISECONDS);
        tasks.put(pluginId, new ScheduledFuture<?>[] {probe, heartbeat});
    }

    /**
     * Deregisters the plugin of {@code supervisor} when its socket has been unreachable for longer than
     * {@code deregisterAfter}; returns whether it did.
     */
    private synchronized boolean deregisterIfUnreachable(PluginSupervisor supervisor) {
        if (closed || registry.get(supervisor.pluginId()).orElse(null) != supervisor) {
            return false;
        }
        java.time.Instant since = supervisor.unreachableSince().orElse(null);
        if (since == null) {
            return false;
        }
        Duration unreachable = Duration.between(since, clock.instant());
        if (unreachable.compareTo(deregisterAfter) < 0) {
            return false;
        }
        SocketFile file = SocketFile.of(supervisor.socket());
        if (file != null) {
            deadSockets.put(supervisor.pluginId(), file);
        }
        deregister(supervisor.pluginId(), "socket " + supervisor.socket() + " unreachable for " + unreachable.toSeconds()
                + "s (more than " + deregisterAfter.toSeconds() + "s): " + supervisor.description()
                + "; registered again when a plugin binds the socket anew", true);
        return true;
    }

    private void deregister(String pluginId, String reason) {
        deregister(pluginId, reason, false);
    }

    /** Stops supervising the plugin; {@code gone}: its last fingerprint says the instance is removed. */
    private void deregister(String pluginId, String reason, boolean gone) {
        ScheduledFuture<?>[] scheduled = tasks.remove(pluginId);
        if (scheduled != null) {
            for (ScheduledFuture<?> f : scheduled) {
                f.cancel(false);
            }
        }
        registry.remove(pluginId).ifPresent(s -> {
            LOG.infof("CSI plugin %s deregistered: %s", pluginId, reason);
            if (gone) {
                s.deregister(reason);
            } else {
                s.stop(reason);
            }
            sink.publish(new NodeEvent(nodeId, null, NodeEventKind.PLUGIN_DEREGISTERED,
                    "Plugin " + pluginId + " deregistered", pluginId, null, null, null, true, null,
                    Map.of("reason", reason), clock.instant()));
        });
    }

    private void register(Path dir) throws IOException {
        if (watched.add(dir)) {
            dir.register(watchService, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_DELETE,
                    StandardWatchEventKinds.ENTRY_MODIFY);
        }
    }

    /** One socket file: a new bind makes a new one (another inode, or the same inode reused at another time). */
    private record SocketFile(Object fileKey, java.nio.file.attribute.FileTime created) {
        static SocketFile of(Path path) {
            if (path == null) {
                return null;
            }
            try {
                BasicFileAttributes attrs = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                return new SocketFile(attrs.fileKey(), attrs.lastModifiedTime());
            } catch (IOException e) {
                return null;
            }
        }
    }

    private static boolean isSocket(Path path) {
        try {
            BasicFileAttributes attrs = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            return attrs.isOther();
        } catch (IOException e) {
            return false;
        }
    }

    /** Stops watching; every plugin publishes a last unhealthy fingerprint. */
    @Override
    public synchronized void close() {
        closed = true;
        if (rescanTask != null) {
            rescanTask.cancel(false);
        }
        for (PluginSupervisor s : registry.all()) {
            ScheduledFuture<?>[] scheduled = tasks.remove(s.pluginId());
            if (scheduled != null) {
                for (ScheduledFuture<?> f : scheduled) {
                    f.cancel(false);
                }
            }
            s.stop("node-mount-worker is shutting down");
        }
        try {
            if (watchService != null) {
                watchService.close();
            }
        } catch (IOException e) {
            LOG.debugf("closing the watch service: %s", e.getMessage());
        }
    }
}
