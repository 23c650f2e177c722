package io.csiorchestrator.simulator;

import io.csiorchestrator.csi.CsiAttempt;
import io.csiorchestrator.csi.CsiAttemptListener;
import io.csiorchestrator.csi.CsiRpc;
import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.PluginCapability;
import io.csiorchestrator.worker.mount.ControllerVolumePlugin;
import io.csiorchestrator.worker.mount.NodeVolumePlugin;
import io.csiorchestrator.worker.mount.PluginCallFailure;
import io.csiorchestrator.worker.mount.VolumeRequest;
import io.grpc.Status;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An in-memory CSI plugin instance of one simulated node, in place of a plugin process reached over gRPC. It
 * answers the calls the worker's {@code VolumeOperations} makes after {@code delay} (the plugin's time) and keeps
 * its "mounts" in memory: a stage or publish adds the path to its mount table ({@link #mountTable()}, which the
 * worker's code reads in place of {@code /proc/self/mountinfo}), an unstage or unpublish removes it; publish
 * creates the target directory and unpublish removes it, as a real plugin does. Nothing is mounted for real.
 * Every call counts in {@link #calls(CsiRpc)} and is reported to {@code attempts} (the worker's
 * {@code csi.rpc} timer), as the csi-client reports a real call's attempt.
 *
 * <p>Capabilities follow the hostpath plugin as {@code ./csi up} runs it: controller and node service
 * (a monolith), STAGE_UNSTAGE_VOLUME, and PUBLISH_UNPUBLISH_VOLUME only when {@code controllerPublish}.
 * Thread-safe: the worker runs volumes concurrently.
 */
public final class SimulatedPlugin implements NodeVolumePlugin, ControllerVolumePlugin {

    /** The topology segment of every simulated node (key, value = node id), like the hostpath plugin's. */
    public static final String TOPOLOGY_KEY = "topology.simulated.csi.csiorchestrator.io/node";
    public static final String PROVIDER = "simulated.csi.csiorchestrator.io";

    private final String pluginId;
    private final String nodeId;
    private final Duration delay;
    private final boolean controllerPublish;
    private final CsiAttemptListener attempts;
    /** Mount point (absolute, normalized) -> read-only. */
    private final Map<String, Boolean> mounts = new LinkedHashMap<>();
    private final Map<CsiRpc, AtomicLong> calls = new EnumMap<>(CsiRpc.class);

    public SimulatedPlugin(String pluginId, String nodeId, Duration delay, boolean controllerPublish,
                           CsiAttemptListener attempts) {
        if (delay.isNegative()) {
            throw new IllegalArgumentException("the plugin delay must not be negative, was " + delay);
        }
        this.pluginId = pluginId;
        this.nodeId = nodeId;
        this.delay = delay;
        this.controllerPublish = controllerPublish;
        this.attempts = attempts;
        for (CsiRpc rpc : CsiRpc.values()) {
            calls.put(rpc, new AtomicLong());
        }
    }

    @Override
    public String pluginId() {
        return pluginId;
    }

    /** What the worker's supervisor would learn from GetPluginInfo, the capabilities and NodeGetInfo. */
    public PluginFingerprint fingerprint() {
        Set<ControllerServiceCapability.RPC.Type> controller = controllerPublish
                ? Set.of(ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
                ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME)
                : Set.of(ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME);
        return new PluginFingerprint(PROVIDER, "0.1.0", Map.of(), true,
                Set.of(PluginCapability.Service.Type.CONTROLLER_SERVICE,
                        PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS),
                controller,
                Optional.of(new PluginFingerprint.NodeFingerprint(nodeId, 0, Map.of(TOPOLOGY_KEY, nodeId),
                        Set.of(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME))));
    }

    @Override
    public boolean requiresStaging() {
        return true;
    }

    @Override
    public void stage(VolumeRequest request) {
        call(CsiRpc.NODE_STAGE_VOLUME);
        mount(request.stagingPath(), false);
    }

    @Override
    public void unstage(String externalVolumeId, Path stagingPath) {
        call(CsiRpc.NODE_UNSTAGE_VOLUME);
        unmount(stagingPath);
    }

    @Override
    public void publish(VolumeRequest request) {
        call(CsiRpc.NODE_PUBLISH_VOLUME);
        Path target = request.targetPath();
        try {
            // the plugin creates the target itself (its parent is the worker's)
            if (!Files.isDirectory(target)) {
                Files.createDirectory(target);
            }
        } catch (IOException e) {
            throw new PluginCallFailure("INTERNAL", "simulated plugin could not create " + target + ": " + e, false);
        }
        mount(target, request.readOnly());
    }

    @Override
    public void unpublish(String externalVolumeId, Path targetPath) {
        call(CsiRpc.NODE_UNPUBLISH_VOLUME);
        unmount(targetPath);
        try {
            Files.deleteIfExists(targetPath);
        } catch (DirectoryNotEmptyException e) {
            // someone wrote into the "mount": keep it, as a real plugin keeps a non-empty target
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public Map<String, String> controllerPublish(VolumeRequest request, String externalNodeId) {
        call(CsiRpc.CONTROLLER_PUBLISH_VOLUME);
        return Map.of();
    }

    @Override
    public void controllerUnpublish(String externalVolumeId, String externalNodeId, Map<String, String> secrets) {
        call(CsiRpc.CONTROLLER_UNPUBLISH_VOLUME);
    }

    /** Marks {@code path} mounted without a call: the plugin's mounts found again after a restart. */
    public synchronized void restoreMount(Path path, boolean readOnly) {
        mounts.put(key(path), readOnly);
    }

    /** The plugin's mounts as a mount table, read by the worker's code in place of the node's mountinfo. */
    public synchronized MountTable mountTable() {
        StringBuilder text = new StringBuilder();
        int id = 100;
        for (Map.Entry<String, Boolean> mount : mounts.entrySet()) {
            text.append(id++).append(" 1 0:0 / ").append(escape(mount.getKey()))
                    .append(mount.getValue() ? " ro" : " rw").append(" - simfs simulated rw\n");
        }
        return MountTable.parse(text.toString());
    }

    /** How often {@code rpc} was called. */
    public long calls(CsiRpc rpc) {
        return calls.get(rpc).get();
    }

    private void call(CsiRpc rpc) {
        long start = System.nanoTime();
        calls.get(rpc).incrementAndGet();
        if (!delay.isZero()) {
            try {
                Thread.sleep(delay.toMillis(), delay.toNanosPart() % 1_000_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PluginCallFailure("CANCELLED", "simulated plugin call interrupted", true);
            }
        }
        attempts.onAttempt(new CsiAttempt(rpc, 1, Status.Code.OK, Optional.empty(),
                Duration.ofNanos(System.nanoTime() - start)));
    }

    private synchronized void mount(Path path, boolean readOnly) {
        mounts.put(key(path), readOnly);
    }

    private synchronized void unmount(Path path) {
        mounts.remove(key(path));
    }

    private static String key(Path path) {
        return path.toAbsolutePath().normalize().toString();
    }

    /** mountinfo's octal escapes of space, tab, newline and backslash. */
    private static String escape(String path) {
        return path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011").replace("\n", "\\012");
    }
}
