package io.csiorchestrator.simulator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import io.csiorchestrator.csi.CsiRpc;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginType;
import io.csiorchestrator.worker.EventSink;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.opentelemetry.context.Context;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A simulated node's answers, without Kafka: the worker's command handling over the in-memory plugin, with
 * the events the node sends collected from its sink.
 */
class SimulatedNodeTest {

    private static final String NODE = "sim-node-7";
    private static final String PLUGIN = "simulated";
    private static final JsonSchemaFactory SCHEMAS = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);
    private static final SchemaValidatorsConfig CONFIG = SchemaValidatorsConfig.builder().formatAssertionsEnabled(true)
            .build();

    @TempDir
    Path root;

    private final List<ContractEvent> sent = new ArrayList<>();
    private final EventSink sink = (event, cause) -> {
        synchronized (sent) {
            sent.add(event);
        }
    };

    private SimulatedNode node(SimulatedPlugin plugin) throws IOException {
        SimulatedNode node = new SimulatedNode(NODE, root.resolve(NODE), plugin, SecretOpener.none(),
                sink, Clock.systemUTC());
        node.open();
        return node;
    }

    private static SimulatedPlugin plugin() {
        return new SimulatedPlugin(PLUGIN, NODE, Duration.ZERO, false, attempt -> { });
    }

    private static NodeCommand command(String id, NodeCommandKind kind, String pluginId, String alloc) {
        return command(id, kind, "vol-1", pluginId, alloc);
    }

    private static NodeCommand command(String id, NodeCommandKind kind, String volumeId, String pluginId, String alloc) {
        return new NodeCommand(id, NODE, kind, "default", volumeId, pluginId, "ext-vol-1", alloc,
                AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM, false, "ext4",
                kind == NodeCommandKind.CONTROLLER_PUBLISH ? NODE : null, Map.of(), Map.of(), null, Instant.now());
    }

    /**
     * Every record a simulated node sends (mount-done of a mount, an unmount, a controller publish and a
     * command for an unknown plugin; the plugin-health transition, heartbeat and last report; the node events of
     * the commands and of the transition) is valid under the events-schema JSON Schema of its topic, and says what
     * a worker says: the mount's host path under the node's root, the instance healthy as a monolith with the
     * node's id and topology, a failed command answered with its code.
     */
    @Test
    void everyAnswerOfASimulatedNodeIsValidUnderTheContractsJsonSchemas() throws Exception {
        SimulatedNode node = node(plugin());
        node.announce();
        node.heartbeat();
        List<MountDone> answers = List.of(
                node.handler().apply(command("c-mount", NodeCommandKind.MOUNT, PLUGIN, "alloc-1"), Context.root()),
                node.handler().apply(command("c-unmount", NodeCommandKind.UNMOUNT, PLUGIN, "alloc-1"), Context.root()),
                node.handler().apply(command("c-cp", NodeCommandKind.CONTROLLER_PUBLISH, PLUGIN, "alloc-1"),
                        Context.root()),
                node.handler().apply(command("c-unknown", NodeCommandKind.MOUNT, "vol-2", "other-plugin", "alloc-2"),
                        Context.root()));
        node.retire();

        List<ContractEvent> all = new ArrayList<>(answers);
        all.addAll(sent);
        Set<EventType> types = new java.util.HashSet<>();
        for (ContractEvent event : all) {
            JsonNode json = EventCodec.mapper().readTree(EventCodec.encode(event));
            Set<ValidationMessage> errors = schema(event.eventType()).validate(json);
            assertTrue(errors.isEmpty(), event.eventType() + " " + json + ": " + errors);
            types.add(event.eventType());
        }
        assertEquals(Set.of(EventType.MOUNT_DONE, EventType.PLUGIN_HEALTH, EventType.NODE_EVENT), types);

        MountDone mount = answers.get(0);
        assertTrue(mount.succeeded(), mount.toString());
        assertTrue(Path.of(mount.hostPath()).startsWith(root.toRealPath()), mount.hostPath());
        assertTrue(answers.get(1).succeeded(), answers.get(1).toString());
        assertTrue(answers.get(2).succeeded(), answers.get(2).toString());
        assertFalse(answers.get(3).succeeded());
        assertEquals("PLUGIN_NOT_FOUND", answers.get(3).errorCode());

        List<PluginHealth> health = sent.stream().filter(PluginHealth.class::isInstance).map(PluginHealth.class::cast)
                .toList();
        assertEquals(3, health.size(), health.toString());
        PluginHealth first = health.get(0);
        assertEquals(PluginType.MONOLITH, first.type());
        assertTrue(first.reportsHealthy());
        assertFalse(first.heartbeat());
        assertNotNull(first.nodeInfo());
        assertEquals(NODE, first.nodeInfo().externalNodeId());
        assertEquals(Map.of(SimulatedPlugin.TOPOLOGY_KEY, NODE), first.nodeInfo().accessibleTopology());
        assertTrue(health.get(1).heartbeat());
        assertFalse(health.get(2).reportsHealthy());

        List<NodeEventKind> kinds = sent.stream().filter(NodeEvent.class::isInstance)
                .map(e -> ((NodeEvent) e).kind()).toList();
        assertEquals(List.of(NodeEventKind.PLUGIN_HEALTH, NodeEventKind.MOUNT, NodeEventKind.UNMOUNT,
                NodeEventKind.CONTROLLER_PUBLISH, NodeEventKind.MOUNT), kinds);
    }

    /**
     * A command delivered again (the same command id) is answered with the first answer from the node's
     * record, without a second plugin call, also by the node started again on the same root (the worker's record
     * store on disk); a new command id for the same allocation is a new command.
     */
    @Test
    void aRedeliveredCommandIsAnsweredFromTheRecordWithoutASecondPluginCall() throws Exception {
        SimulatedPlugin plugin = plugin();
        SimulatedNode node = node(plugin);
        NodeCommand mount = command("c-1", NodeCommandKind.MOUNT, PLUGIN, "alloc-1");
        MountDone first = node.handler().apply(mount, Context.root());
        assertTrue(first.succeeded(), first.toString());
        MountDone again = node.handler().apply(mount, Context.root());
        assertEquals(first, again);
        assertEquals(1, plugin.calls(CsiRpc.NODE_STAGE_VOLUME));
        assertEquals(1, plugin.calls(CsiRpc.NODE_PUBLISH_VOLUME));
        assertTrue(Files.isDirectory(Path.of(first.hostPath())), "the plugin made the target");

        SimulatedPlugin restartedPlugin = plugin();
        SimulatedNode restarted = node(restartedPlugin);
        assertEquals(first, restarted.handler().apply(mount, Context.root()));
        assertEquals(0, restartedPlugin.calls(CsiRpc.NODE_PUBLISH_VOLUME));
        assertTrue(restartedPlugin.mountTable().isMountPoint(Path.of(first.hostPath())),
                "the restarted node's plugin still has the publication");

        MountDone unmount = restarted.handler().apply(command("c-2", NodeCommandKind.UNMOUNT, PLUGIN, "alloc-1"),
                Context.root());
        assertTrue(unmount.succeeded(), unmount.toString());
        assertEquals(1, restartedPlugin.calls(CsiRpc.NODE_UNPUBLISH_VOLUME));
        assertEquals(1, restartedPlugin.calls(CsiRpc.NODE_UNSTAGE_VOLUME));
        assertTrue(restartedPlugin.mountTable().mounts().isEmpty(), restartedPlugin.mountTable().mounts().toString());
    }

    /**
     * Issue 36: a mount with the controller steps ({@code withController}, the claim's controller instance is the
     * claiming node's own) makes the simulated controller publish and the node's stage and publish, answered once;
     * the unmount with them unpublishes, unstages and ends the controller publication. The answers and the command
     * are valid under the contract's schemas.
     */
    @Test
    void aCombinedMountAndUnmountMakeTheControllerAndTheNodeCallsInOneCommandEach() throws Exception {
        SimulatedPlugin plugin = new SimulatedPlugin(PLUGIN, NODE, Duration.ZERO, true, attempt -> { });
        SimulatedNode node = node(plugin);
        NodeCommand mount = combined("c-mount", NodeCommandKind.MOUNT);
        MountDone mounted = node.handler().apply(mount, Context.root());
        assertTrue(mounted.succeeded(), mounted.toString());
        assertEquals(1, plugin.calls(CsiRpc.CONTROLLER_PUBLISH_VOLUME));
        assertEquals(1, plugin.calls(CsiRpc.NODE_STAGE_VOLUME));
        assertEquals(1, plugin.calls(CsiRpc.NODE_PUBLISH_VOLUME));
        assertTrue(plugin.mountTable().isMountPoint(Path.of(mounted.hostPath())));
        assertTrue(node.records().get(0).controllerPublications().containsKey(NODE), node.records().toString());
        assertEquals(1, sent.stream().filter(e -> e instanceof NodeEvent n && n.kind() == NodeEventKind.MOUNT).count(),
                "one command, one answer and one mount event");

        NodeCommand unmount = combined("c-unmount", NodeCommandKind.UNMOUNT);
        MountDone released = node.handler().apply(unmount, Context.root());
        assertTrue(released.succeeded(), released.toString());
        assertEquals(1, plugin.calls(CsiRpc.NODE_UNPUBLISH_VOLUME));
        assertEquals(1, plugin.calls(CsiRpc.NODE_UNSTAGE_VOLUME));
        assertEquals(1, plugin.calls(CsiRpc.CONTROLLER_UNPUBLISH_VOLUME));
        assertTrue(plugin.mountTable().mounts().isEmpty(), plugin.mountTable().mounts().toString());
        assertTrue(node.records().get(0).idle(), node.records().toString());

        for (ContractEvent event : List.of(mount, unmount, mounted, released)) {
            JsonNode json = EventCodec.mapper().readTree(EventCodec.encode(event));
            Set<ValidationMessage> errors = schema(event.eventType()).validate(json);
            assertTrue(errors.isEmpty(), event.eventType() + " " + json + ": " + errors);
        }
    }

    private static NodeCommand combined(String id, NodeCommandKind kind) {
        boolean mount = kind == NodeCommandKind.MOUNT;
        return new NodeCommand(id, NODE, kind, "default", "vol-1", PLUGIN, "ext-vol-1", "alloc-1",
                mount ? AccessMode.MULTI_NODE_SINGLE_WRITER : null, mount ? AttachmentMode.FILE_SYSTEM : null, false,
                null, NODE, Map.of(), Map.of(), null, Instant.now()).withControllerSteps();
    }

    private static JsonSchema schema(EventType type) throws IOException {
        try (InputStream in = EventType.class.getResourceAsStream(type.schemaResource())) {
            assertNotNull(in, "missing schema " + type.schemaResource());
            return SCHEMAS.getSchema(in, CONFIG);
        }
    }
}
