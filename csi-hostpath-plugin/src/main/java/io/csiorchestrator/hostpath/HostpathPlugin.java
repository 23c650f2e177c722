package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.hostpath.faults.FaultInjector;
import io.csiorchestrator.hostpath.fence.FenceStore;
import io.csiorchestrator.hostpath.mount.Mounter;
import io.csiorchestrator.hostpath.state.StateStore;

import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.function.Supplier;
import java.util.logging.Logger;

/** The hostpath CSI plugin: its state, services and socket, started and stopped as one. */
public final class HostpathPlugin implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(HostpathPlugin.class.getName());

    private final PluginOptions options;
    private final CallLog callLog;
    private final NodeService node;
    private final UnixSocketServer server;
    private final FenceKeeper fences;
    private final CallThreads callThreads;
    private final PluginStateHolder state;

    private HostpathPlugin(PluginOptions options, CallLog callLog, NodeService node, UnixSocketServer server,
                           FenceKeeper fences, CallThreads callThreads, PluginStateHolder state) {
        this.options = options;
        this.callLog = callLog;
        this.node = node;
        this.server = server;
        this.fences = fences;
        this.callThreads = callThreads;
        this.state = state;
    }

    /** Loads the state from the state dir and serves CSI on the socket. */
    public static HostpathPlugin start(PluginOptions options, String version) throws IOException {
        Files.createDirectories(options.stateDir());
        if (!options.faultRules().isEmpty()) {
            FaultInjector.appendRules(options.faultsFile(), options.faultRules());
        }
        FaultInjector faults = new FaultInjector(options.faultsFile());
        if (options.sharedDir() != null) {
            Files.createDirectories(options.sharedDir());
        }
        PluginStateHolder state = new PluginStateHolder(new StateStore(options.stateDir(), options.sharedDir()));
        VolumeDirectories directories = new VolumeDirectories(options.volumesParent());
        Files.createDirectories(directories.root());
        Supplier<MountTable> mountTable = MountTable::readSelf;
        Mounter mounter = new Mounter(mountTable);
        FenceKeeper fences = new FenceKeeper(options, state, new FenceStore(options.volumesParent()), mountTable,
                mounter);
        NodeService node = new NodeService(options, state, directories, mounter, fences);
        // A restarted plugin enforces its node's fences before it answers anything.
        fences.start();
        CallLog callLog = new CallLog(options.stateDir());
        CallThreads callThreads = new CallThreads(faults, options.fenceOnControllerUnpublish());
        try {
            UnixSocketServer server = UnixSocketServer.start(options.socketPath(), List.of(
                    new IdentityService(options, version, faults),
                    new ControllerService(options, state, directories, mountTable, fences),
                    node), new CallInterceptor(faults, callLog), callThreads);
            LOG.info("CSI hostpath plugin " + options.pluginName() + " " + version + " listening on unix://"
                    + options.socketPath() + " (node " + options.nodeId() + ", state dir " + options.stateDir()
                    + (options.sharedDir() == null ? "" : ", shared dir " + options.sharedDir())
                    + ", stage-unstage=" + options.stageUnstage() + ", controller-publish=" + options.controllerPublish()
                    + ", max-volumes-per-node=" + options.maxVolumesPerNode()
                    + ", unmount-staging-on-exit=" + options.unmountStagingOnExit()
                    + ", mounts with " + (mounter.usesSyscalls() ? "mount(2)" : "util-linux mount")
                    + ", fence-on-controller-unpublish=" + options.fenceOnControllerUnpublish()
                    + ", faults file " + options.faultsFile() + ")");
            return new HostpathPlugin(options, callLog, node, server, fences, callThreads, state);
        } catch (IOException | RuntimeException e) {
            callThreads.close();
            fences.close();
            callLog.close();
            state.close();
            throw e;
        }
    }

    /** Stops serving; with --unmount-staging-on-exit, unmounts the staging mounts too. */
    @Override
    public void close() {
        server.stop();
        callThreads.close();
        fences.close();
        if (options.unmountStagingOnExit()) {
            node.unmountStagings();
        }
        state.close();
        try {
            callLog.close();
        } catch (IOException e) {
            LOG.warning("cannot close the call log: " + e.getMessage());
        }
        LOG.info("CSI hostpath plugin stopped");
    }
}
