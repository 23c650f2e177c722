package io.csiorchestrator.worker.it;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A fresh worker root and plugins directory for the test run, with short supervision intervals.
 * On stop (after the application stopped): kills the plugin processes, unmounts every mount left
 * under the root (deepest first) and deletes the root.
 */
public class WorkerRootResource implements QuarkusTestResourceLifecycleManager {

    static Path root;
    /** A test-only AES-256 key (32 zero bytes, base64); never a real key. */

    @Override
    public Map<String, String> start() {
        try {
            root = Files.createTempDirectory("csi-worker-it").toRealPath();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        Map<String, String> config = new LinkedHashMap<>();
        config.put("csi.worker.node-id", "test-node");
        config.put("csi.worker.root", root.resolve("worker").toString());
        config.put("csi.worker.plugins-dir", root.resolve("plugins").toString());
        config.put("csi.worker.probe-interval", "500ms");
        config.put("csi.worker.probe-timeout", "2s");
        config.put("csi.worker.heartbeat-interval", "3s");
        config.put("csi.worker.rescan-interval", "1s");
        config.put("csi.worker.restore-plugin-timeout", "15s");
        config.put("csi.worker.plugin-deregister-after", "4s");
        config.put("csi.worker.connect-timeout", "2s");
        config.put("csi.worker.call-timeout", "10s");
        config.put("csi.worker.call-attempts", "2");
        config.put("csi.worker.heal-interval", "1s");
        config.put("csi.worker.condition-interval", "1s");
        // this node's sealing keys (issue 20 item 4): the tests seal for it with TestIdentities
        io.csiorchestrator.events.identity.Principal self = io.csiorchestrator.events.identity.Principal.node("test-node");
        io.csiorchestrator.testkit.TestIdentities.sealing(self);
        config.put("csi.worker.seal-key-file", io.csiorchestrator.testkit.TestIdentities.sealKeyFile(self).toString());
        return config;
    }

    @Override
    public void stop() {
        HostpathPlugin.killAll();
        if (root != null) {
            unmountAllUnder(root);
            try (Stream<Path> files = Files.walk(root)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // best effort
            }
        }
    }

    static void unmountAllUnder(Path dir) {
        for (int round = 0; round < 5; round++) {
            var mounts = MountTable.readSelf().mountsUnder(dir).stream().map(MountInfo::mountPoint).toList();
            if (mounts.isEmpty()) {
                return;
            }
            for (String m : mounts) {
                try {
                    Process p = new ProcessBuilder("umount", "-l", m).redirectErrorStream(true).start();
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (IOException | InterruptedException e) {
                    // next round
                }
            }
        }
    }
}
