package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.CsiAttempt;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.csi.v1.VolumeCapability;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/** Shared pieces of the client-against-plugin tests. */
final class PluginFixture {

    static final Duration WAIT = Duration.ofSeconds(30);

    static final VolumeCapability WRITER = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
            CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE);
    static final VolumeCapability MULTI_WRITER = VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_MULTI_WRITER,
            CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE);

    private PluginFixture() {
    }

    /** Attempts the client reported, in order. */
    static final class AttemptRecorder {
        final List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();

        CsiClientOptions options() {
            return CsiClientOptions.defaults().withAttemptListener(attempts::add);
        }

        List<CsiAttempt> of(String method) {
            return attempts.stream().filter(a -> a.rpc().methodName().equals(method)).toList();
        }
    }

    static CsiPluginClient connect(HostpathPluginProcess plugin, CsiClientOptions options) {
        return CsiPluginClient.connect(plugin.socketPath(), options).await().atMost(WAIT);
    }

    static Optional<MountInfo> mountAt(Path path) {
        return MountTable.readSelf().mountAt(path);
    }

    /** Stops the plugin and unmounts whatever is left below the test's directory. */
    static void tearDown(HostpathPluginProcess plugin, CsiPluginClient client, Path testDir) throws IOException {
        if (client != null) {
            client.close();
        }
        if (plugin != null) {
            plugin.stop();
        }
        HostpathPluginProcess.unmountAllUnder(testDir);
    }
}
