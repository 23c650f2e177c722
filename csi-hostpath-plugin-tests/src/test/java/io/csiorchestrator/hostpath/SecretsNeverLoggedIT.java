package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.CsiCallException;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.CsiRetryPolicy;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.VolumeCapability;
import org.jboss.logmanager.ExtLogRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import java.util.stream.Collectors;

import static io.csiorchestrator.hostpath.PluginFixture.WAIT;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A failing call carrying a secret and a mount flag: neither reaches any log or message. */
class SecretsNeverLoggedIT {

    private static final String SECRET = "canary-secret-5c1e";
    private static final String FLAG = "password=canary-flag-77ab";

    @TempDir
    Path dir;

    private HostpathPluginProcess plugin;
    private CsiPluginClient client;
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Logger clientLogger = Logger.getLogger("io.csiorchestrator.csi");
    private final Handler capture = new Handler() {
        @Override
        public void publish(LogRecord record) {
            records.add(record);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @AfterEach
    void tearDown() throws IOException {
        clientLogger.removeHandler(capture);
        PluginFixture.tearDown(plugin, client, dir);
    }

    @Test
    void aSecretAndAMountFlagNeverAppearInTheLogOfAFailingCall() throws Exception {
        clientLogger.setLevel(Level.ALL);
        clientLogger.addHandler(capture);
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state")).start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults().withRetryPolicy(
                CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(10), Duration.ofMillis(50))));
        VolumeCapability capability = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.of("ext4", "noatime", FLAG));
        String volumeId = client.createVolume(CreateVolumeRequest.newBuilder().setName("secret-volume")
                .addVolumeCapabilities(capability).putSecrets("password", SECRET).build())
                .await().atMost(WAIT).getVolume().getVolumeId();
        client.controllerPublish(ControllerPublishVolumeRequest.newBuilder().setVolumeId(volumeId).setNodeId("n1")
                .setVolumeCapability(capability).putSecrets("password", SECRET).build()).await().atMost(WAIT);
        // The plugin echoes the secret and the flag in its error: the client must scrub them out.
        plugin.injectFaults("NodeStageVolume UNAVAILABLE 1 still starting",
                "NodeStageVolume INTERNAL 1 mount -o " + FLAG + " failed for user " + SECRET);
        String stagingPath = dir.resolve("staging/secret").toString();

        CsiCallException failure = assertThrows(CsiCallException.class, () -> client.nodeStage(
                NodeStageVolumeRequest.newBuilder().setVolumeId(volumeId).setStagingTargetPath(stagingPath)
                        .setVolumeCapability(capability).putSecrets("password", SECRET)
                        .putVolumeContext("pool", "fast-pool").build()).await().atMost(WAIT));

        assertEquals(2, failure.attempts());
        String clientLog = records.stream().map(SecretsNeverLoggedIT::render).collect(Collectors.joining("\n"));
        String exceptionText = render(failure);
        await().atMost(WAIT).until(() -> plugin.output().contains("NodeStageVolume -> INTERNAL (injected)"));
        String pluginLog = plugin.output();

        for (String text : List.of(clientLog, exceptionText, pluginLog)) {
            assertFalse(text.contains("canary"), "a secret or flag leaked into:\n" + text);
        }
        // ...while the rest of the request is there to debug with.
        for (String kept : List.of(volumeId, stagingPath, "fast-pool", "ext4", "password")) {
            assertTrue(clientLog.contains(kept), kept + " missing from the client log:\n" + clientLog);
            assertTrue(pluginLog.contains(kept), kept + " missing from the plugin log:\n" + pluginLog);
        }
        assertTrue(failure.redactedRequest().contains(volumeId), failure.redactedRequest());
        assertTrue(failure.pluginMessage().startsWith("mount -o *** failed for user ***"), failure.pluginMessage());
        assertTrue(clientLog.contains("attempt 1") && clientLog.contains("UNAVAILABLE"), clientLog);
    }

    private static String render(LogRecord record) {
        String message = record instanceof ExtLogRecord ext ? ext.getFormattedMessage()
                : new SimpleFormatter().formatMessage(record);
        return record.getLevel() + " " + message + (record.getThrown() == null ? "" : "\n" + render(record.getThrown()));
    }

    private static String render(Throwable failure) {
        StringWriter trace = new StringWriter();
        failure.printStackTrace(new PrintWriter(trace));
        return trace.toString();
    }
}
