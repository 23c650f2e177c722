package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiAttempt;
import io.csiorchestrator.csi.CsiCallException;
import io.csiorchestrator.csi.CsiFailureKind;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.CsiRetryPolicy;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.grpc.Status;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static io.csiorchestrator.hostpath.PluginFixture.MULTI_WRITER;
import static io.csiorchestrator.hostpath.PluginFixture.WAIT;
import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every retry and error path of the client, by fault injection into the hostpath plugin (a
 * separate process). Attempts are observed through the client's attempt listener and the
 * plugin's call log, never by timing.
 */
class ClientRetriesAndErrorsIT {

    @TempDir
    static Path dir;

    private static HostpathPluginProcess plugin;
    private static CsiPluginClient client;
    private static final PluginFixture.AttemptRecorder RECORDER = new PluginFixture.AttemptRecorder();
    private static String volumeId;

    @BeforeAll
    static void startPlugin() throws IOException {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state"))
                .maxVolumesPerNode(1).start();
        client = PluginFixture.connect(plugin, RECORDER.options());
        volumeId = client.createVolume(CreateVolumeRequest.newBuilder().setName("retries")
                .addVolumeCapabilities(MULTI_WRITER).build()).await().atMost(WAIT).getVolume().getVolumeId();
    }

    @AfterAll
    static void stopPlugin() throws IOException {
        PluginFixture.tearDown(plugin, client, dir);
    }

    @BeforeEach
    void resetFaults() {
        plugin.clearFaults();
        RECORDER.attempts.clear();
    }

    @Test
    void twoUnavailableThenOkSucceedsAfterThreeAttemptsWithGrowingDelays() {
        long before = plugin.callCount("ControllerPublishVolume");
        plugin.injectFaults("ControllerPublishVolume UNAVAILABLE 2");

        client.controllerPublish(publishRequest()).await().atMost(WAIT);

        List<CsiAttempt> attempts = RECORDER.of("ControllerPublishVolume");
        assertEquals(List.of(Status.Code.UNAVAILABLE, Status.Code.UNAVAILABLE, Status.Code.OK),
                attempts.stream().map(CsiAttempt::outcome).toList());
        Duration first = attempts.get(0).delayBeforeNext().orElseThrow();
        Duration second = attempts.get(1).delayBeforeNext().orElseThrow();
        assertEquals(Duration.ofMillis(100), first);
        assertTrue(second.compareTo(first) > 0, "delays grow: " + first + " then " + second);
        assertEquals(Optional.empty(), attempts.get(2).delayBeforeNext());
        assertEquals(3, plugin.callCount("ControllerPublishVolume") - before, "the plugin saw 3 calls");
        assertEquals("", readFaults(), "both injected failures were consumed");
    }

    @Test
    void unimplementedIsTriedExactlyOnce() {
        long before = plugin.callCount("NodeStageVolume");
        plugin.injectFaults("NodeStageVolume UNIMPLEMENTED *");

        CsiCallException failure = assertThrows(CsiCallException.class, () -> client.nodeStage(
                NodeStageVolumeRequest.newBuilder().setVolumeId(volumeId)
                        .setStagingTargetPath(dir.resolve("staging").toString()).setVolumeCapability(MULTI_WRITER)
                        .build()).await().atMost(WAIT));

        assertEquals(Status.Code.UNIMPLEMENTED, failure.code());
        assertEquals(1, failure.attempts());
        assertTrue(failure.isFatal());
        assertEquals(1, RECORDER.of("NodeStageVolume").size());
        assertEquals(1, plugin.callCount("NodeStageVolume") - before, "the plugin saw exactly one call");
        assertEquals("the CSI plugin does not implement NodeStageVolume", failure.operatorMessage());
    }

    @Test
    void notFoundOnUnpublishCountsAsDone() {
        plugin.injectFaults("NodeUnpublishVolume NOT_FOUND 1 volume is gone",
                "ControllerUnpublishVolume NOT_FOUND 1");

        client.nodeUnpublish(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setTargetPath(dir.resolve("targets/none").toString()).build()).await().atMost(WAIT);
        client.controllerUnpublish(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setNodeId("n1").build()).await().atMost(WAIT);

        assertEquals(Status.Code.NOT_FOUND, RECORDER.of("NodeUnpublishVolume").get(0).outcome());
        assertEquals(Status.Code.NOT_FOUND, RECORDER.of("ControllerUnpublishVolume").get(0).outcome());
    }

    @Test
    void failedPreconditionGivesTheOperatorMessageAndThePluginsOwn() {
        plugin.injectFaults("NodePublishVolume FAILED_PRECONDITION 1 staging device vanished");
        Path target = dir.resolve("targets/fp");

        CsiCallException failure = assertThrows(CsiCallException.class, () -> client.nodePublish(
                NodePublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                        .setStagingTargetPath(dir.resolve("staging/fp").toString())
                        .setTargetPath(target.toString()).setVolumeCapability(MULTI_WRITER).build())
                .await().atMost(WAIT));

        assertEquals(Status.Code.FAILED_PRECONDITION, failure.code());
        assertEquals(CsiFailureKind.PRECONDITION, failure.kind());
        assertEquals(1, failure.attempts(), "no blind retry");
        assertEquals("volume " + volumeId + " cannot be published at " + target + ": it is not staged at "
                + dir.resolve("staging/fp") + " or its capabilities do not fit; stage it again before publishing",
                failure.operatorMessage());
        assertEquals("staging device vanished", failure.pluginMessage());
        assertTrue(failure.getMessage().contains("plugin says: staging device vanished"), failure.getMessage());
    }

    @Test
    void theRealPluginAnswersFailedPreconditionForAnUnstagedVolume() {
        CsiCallException failure = assertThrows(CsiCallException.class, () -> client.nodePublish(
                NodePublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                        .setStagingTargetPath(dir.resolve("staging/never").toString())
                        .setTargetPath(dir.resolve("targets/never").toString()).setVolumeCapability(MULTI_WRITER)
                        .build()).await().atMost(WAIT));
        assertEquals(Status.Code.FAILED_PRECONDITION, failure.code());
        assertTrue(failure.pluginMessage().contains("is not staged at"), failure.pluginMessage());
    }

    @Test
    void maxVolumesPerNodeIsResourceExhaustedRetriedThenReportedForTheNode() {
        client.controllerPublish(publishRequest()).await().atMost(WAIT);
        String second = client.createVolume(CreateVolumeRequest.newBuilder().setName("one-too-many")
                .addVolumeCapabilities(WRITER).build()).await().atMost(WAIT).getVolume().getVolumeId();
        long before = plugin.callCount("ControllerPublishVolume");

        CsiCallException failure = assertThrows(CsiCallException.class, () -> client.controllerPublish(
                ControllerPublishVolumeRequest.newBuilder().setVolumeId(second).setNodeId("n1")
                        .setVolumeCapability(WRITER).build()).await().atMost(WAIT));

        assertEquals(Status.Code.RESOURCE_EXHAUSTED, failure.code());
        assertEquals("node n1 has reached the maximum number of attached volumes", failure.operatorMessage());
        assertEquals(3, failure.attempts());
        assertEquals(3, plugin.callCount("ControllerPublishVolume") - before);
        assertTrue(failure.isRetryable());
    }

    /**
     * Also: each attempt the client gave up on is logged by the plugin, when its latency is over,
     * as {@code GetPluginInfo CANCELLED} (gRPC skips the handler of a cancelled call), so no call
     * stays in flight in the call logs.
     */
    @Test
    void aSlowPluginHitsThePerAttemptDeadlineAndIsRetried() {
        long startedBefore = plugin.startedCallCount("GetPluginInfo");
        List<CallLog.Call> callsBefore = plugin.calls();
        plugin.injectFaults("latency GetPluginInfo 400ms");
        CsiPluginClient impatient = client.withOptions(RECORDER.options().withRetryPolicy(CsiRetryPolicy.defaults()
                .withPerAttemptTimeout(Duration.ofMillis(100)).withBackoff(Duration.ofMillis(10), Duration.ofMillis(100))));

        CsiCallException failure = assertThrows(CsiCallException.class,
                () -> impatient.getPluginInfo().await().atMost(WAIT));

        assertEquals(Status.Code.DEADLINE_EXCEEDED, failure.code());
        assertTrue(failure.isUncertain());
        assertEquals(3, failure.attempts());
        assertTrue(failure.operatorMessage().contains("may still be in progress"), failure.operatorMessage());

        long started = plugin.startedCallCount("GetPluginInfo") - startedBefore;
        assertTrue(started >= 1 && started <= 3, "attempts that reached the plugin: " + started);
        await().atMost(WAIT).until(() -> plugin.calls().size() - callsBefore.size() == started);
        plugin.clearFaults();
        List<CallLog.Call> all = plugin.calls();
        assertTrue(all.subList(callsBefore.size(), all.size()).stream()
                .allMatch(call -> call.equals(new CallLog.Call("GetPluginInfo", Status.Code.CANCELLED))),
                "each ended as CANCELLED: " + all.subList(callsBefore.size(), all.size()));
    }

    /**
     * A call held up by a fault runs on a pool thread (CallThreads): Probe, on the same connection, is answered while
     * it is still in flight, as it would be by a plugin that serves calls concurrently.
     */
    @Test
    void aDelayedCallDoesNotHoldUpProbeOnTheSameConnection() {
        plugin.injectFaults("latency GetPluginInfo 3s");
        java.util.concurrent.CompletableFuture<?> slow = client.getPluginInfo().subscribeAsCompletionStage();

        await().atMost(WAIT).until(() -> plugin.startedCallCount("GetPluginInfo") > 0 || slow.isDone());
        assertTrue(client.probe().await().atMost(WAIT));

        assertFalse(slow.isDone(), "Probe was answered while GetPluginInfo still waited out its latency");
        slow.join();
    }

    @Test
    void probeReportsNotReadyWhenTold() {
        assertTrue(client.probe().await().atMost(WAIT));
        plugin.injectFaults("probe-not-ready");
        assertFalse(client.probe().await().atMost(WAIT));
    }

    private static ControllerPublishVolumeRequest publishRequest() {
        return ControllerPublishVolumeRequest.newBuilder().setVolumeId(volumeId).setNodeId("n1")
                .setVolumeCapability(MULTI_WRITER).build();
    }

    private static String readFaults() {
        try {
            return Files.readString(plugin.faultsFile()).strip();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
