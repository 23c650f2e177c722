package io.csiorchestrator.plugins.domain;

import static io.csiorchestrator.plugins.domain.Reports.T0;
import static io.csiorchestrator.plugins.domain.Reports.controller;
import static io.csiorchestrator.plugins.domain.Reports.instance;
import static io.csiorchestrator.plugins.domain.Reports.monolith;
import static io.csiorchestrator.plugins.domain.Reports.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.PluginType;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PluginStatusCalculatorTest {

    @Test
    void countsControllersAndNodesFromTheInstances() {
        PluginStatus status = PluginStatusCalculator.calculate("p", List.of(
                instance(node("p", "n2", true, T0), T0),
                instance(controller("p", "c1", true, T0, PluginHealth.PUBLISH_UNPUBLISH_VOLUME), T0),
                instance(node("p", "n1", false, T0), T0),
                instance(node("p", "n3", true, T0), T0)), T0);

        assertEquals(1, status.controllersHealthy());
        assertEquals(1, status.controllersExpected());
        assertEquals(2, status.nodesHealthy());
        assertEquals(3, status.nodesExpected());
        assertTrue(status.controllerRequired());
        assertEquals(List.of("c1"), status.controllers().stream().map(PluginStatus.ControllerInstance::nodeId).toList());
        assertEquals(List.of("n1", "n2", "n3"), status.nodes().stream().map(PluginStatus.NodeInstance::nodeId).toList(),
                "instances listed by node id");
        PluginStatus.NodeInstance n1 = status.nodes().get(0);
        assertEquals("ext-n1", n1.externalNodeId());
        assertEquals(16L, n1.maxVolumes());
        assertEquals(Map.of("zone", "z1"), n1.accessibleTopology());
        assertFalse(n1.healthy());
        assertEquals("probe failed", n1.healthDescription());
        assertEquals(T0, status.updatedAt());
        EventCodec.requireValid(status);
    }

    @Test
    void aMonolithCountsAsControllerAndNode() {
        PluginStatus status = PluginStatusCalculator.calculate("m", List.of(
                instance(monolith("m", "a", true, T0), T0),
                instance(monolith("m", "b", false, T0), T0)), T0);

        assertEquals(1, status.controllersHealthy());
        assertEquals(2, status.controllersExpected());
        assertEquals(1, status.nodesHealthy());
        assertEquals(2, status.nodesExpected());
        assertFalse(status.controllerRequired(), "no controller advertises PUBLISH_UNPUBLISH_VOLUME");
        assertEquals(2, status.controllers().size());
        assertEquals(2, status.nodes().size());
    }

    @Test
    void controllerRequiredOnlyWhenAControllerAdvertisesPublishUnpublish() {
        assertTrue(PluginStatusCalculator.calculate("m", List.of(
                instance(monolith("m", "a", true, T0, PluginHealth.PUBLISH_UNPUBLISH_VOLUME), T0)), T0).controllerRequired());
        assertFalse(PluginStatusCalculator.calculate("p", List.of(
                instance(controller("p", "c", true, T0, "CREATE_DELETE_VOLUME"), T0),
                instance(node("p", "n", true, T0), T0)), T0).controllerRequired());
        // A node instance's controller capabilities (none should be there) don't count.
        PluginHealth oddNode = new PluginHealth("p", "n", PluginType.NODE, true, null, null, null, List.of(),
                List.of(PluginHealth.PUBLISH_UNPUBLISH_VOLUME), List.of(), null, false, T0);
        assertFalse(PluginStatusCalculator.calculate("p", List.of(instance(oddNode, T0)), T0).controllerRequired());
    }

    /**
     * Issue 14 item 3: the status says the plugin expands volumes when a controller instance advertises the
     * EXPAND_VOLUME controller capability, and that its nodes do when a node instance advertises the node capability;
     * a plugin without either says neither, and the encoded status carries both.
     */
    @Test
    void expansionCapabilitiesComeFromTheControllerAndNodeInstances() {
        PluginHealth expandingNode = new PluginHealth("p", "n", PluginType.NODE, true, null, null, null, List.of(),
                List.of(), List.of("STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"), null, false, T0);
        PluginStatus both = PluginStatusCalculator.calculate("p", List.of(
                instance(controller("p", "c", true, T0, "CREATE_DELETE_VOLUME", "EXPAND_VOLUME"), T0),
                instance(expandingNode, T0)), T0);
        assertTrue(both.controllerExpansion());
        assertTrue(both.nodeExpansion());
        assertEquals(both, EventCodec.decode(PluginStatus.class, EventCodec.encode(both)));

        PluginStatus neither = PluginStatusCalculator.calculate("p", List.of(
                instance(controller("p", "c", true, T0, "CREATE_DELETE_VOLUME"), T0),
                instance(node("p", "n", true, T0), T0)), T0);
        assertFalse(neither.controllerExpansion());
        assertFalse(neither.nodeExpansion());
        assertFalse(PluginStatusCalculator.sameStatus(both, neither), "a capability change is a status change");
    }

    /**
     * Issue 14: the VolumeExpansion plugin capability the instances advertise (plugin-health's pluginCapabilities
     * VOLUME_EXPANSION_ONLINE / _OFFLINE) becomes the status' volumeExpansion: online when they say ONLINE, offline as
     * soon as one says OFFLINE (instances that disagree, e.g. in a rolling upgrade: the stricter one), absent when none
     * says either; it survives the codec and its change is a status change.
     */
    @Test
    void volumeExpansionIsOfflineWhenAnyInstanceSaysSoOnlineWhenOneSaysOnlineElseAbsent() {
        PluginStatus online = PluginStatusCalculator.calculate("p", List.of(
                instance(expanding("c", PluginType.CONTROLLER, "VOLUME_EXPANSION_ONLINE"), T0),
                instance(expanding("n", PluginType.NODE, "VOLUME_EXPANSION_ONLINE"), T0)), T0);
        assertEquals(io.csiorchestrator.events.VolumeExpansionMode.ONLINE, online.volumeExpansion());
        PluginStatus mixed = PluginStatusCalculator.calculate("p", List.of(
                instance(expanding("c", PluginType.CONTROLLER, "VOLUME_EXPANSION_ONLINE"), T0),
                instance(expanding("n", PluginType.NODE, "VOLUME_EXPANSION_OFFLINE"), T0)), T0);
        assertEquals(io.csiorchestrator.events.VolumeExpansionMode.OFFLINE, mixed.volumeExpansion());
        assertTrue(EventCodec.encodeToString(mixed).contains("\"volumeExpansion\":\"offline\""), EventCodec.encodeToString(mixed));
        assertEquals(mixed, EventCodec.decode(PluginStatus.class, EventCodec.encode(mixed)));
        assertFalse(PluginStatusCalculator.sameStatus(online, mixed), "online to offline is a status change");
        PluginStatus none = PluginStatusCalculator.calculate("p", List.of(
                instance(controller("p", "c", true, T0, "EXPAND_VOLUME"), T0)), T0);
        assertNull(none.volumeExpansion());
        assertFalse(EventCodec.encodeToString(none).contains("volumeExpansion"));
    }

    /** Issue 14: listVolumes when a controller instance advertises LIST_VOLUMES (a node instance's does not count). */
    @Test
    void listVolumesWhenAControllerAdvertisesIt() {
        PluginStatus lists = PluginStatusCalculator.calculate("p", List.of(
                instance(controller("p", "c", true, T0, "CREATE_DELETE_VOLUME", "LIST_VOLUMES"), T0),
                instance(node("p", "n", true, T0), T0)), T0);
        assertTrue(lists.listVolumes());
        assertEquals(lists, EventCodec.decode(PluginStatus.class, EventCodec.encode(lists)));
        PluginStatus not = PluginStatusCalculator.calculate("p", List.of(
                instance(controller("p", "c", true, T0, "CREATE_DELETE_VOLUME"), T0)), T0);
        assertFalse(not.listVolumes());
        assertFalse(PluginStatusCalculator.sameStatus(lists, not), "a capability change is a status change");
    }

    private static PluginHealth expanding(String node, PluginType type, String expansion) {
        return new PluginHealth("p", node, type, true, null, null, null, List.of("CONTROLLER_SERVICE", expansion),
                type == PluginType.NODE ? List.of() : List.of("EXPAND_VOLUME"),
                type == PluginType.NODE ? List.of("EXPAND_VOLUME") : List.of(),
                type == PluginType.NODE ? new io.csiorchestrator.events.NodeInfo("ext-" + node, 0L, Map.of()) : null, false, T0);
    }

    @Test
    void aSilentInstanceIsUnhealthyWithTheSilenceReason() {
        PluginInstance silent = instance(node("p", "n1", true, T0), T0).silencedBecause("no heartbeat from node n1 for more than 90s");
        PluginStatus status = PluginStatusCalculator.calculate("p", List.of(silent, instance(node("p", "n2", true, T0), T0)), T0);

        assertEquals(1, status.nodesHealthy());
        assertEquals(2, status.nodesExpected());
        assertFalse(status.nodes().get(0).healthy());
        assertEquals("no heartbeat from node n1 for more than 90s", status.nodes().get(0).healthDescription());
    }

    @Test
    void noInstancesMeansZeroCounts() {
        PluginStatus status = PluginStatusCalculator.calculate("p", List.of(), T0);
        assertEquals(0, status.controllersExpected());
        assertEquals(0, status.nodesExpected());
        assertNull(status.providerName());
    }

    @Test
    void providerIsWhatMostInstancesRunTiesToTheGreatest() {
        PluginHealth old = node("p", "n1", true, T0);
        PluginHealth upgraded = new PluginHealth("p", "n2", PluginType.NODE, true, null, "hostpath.csi.example", "1.3.0",
                List.of(), List.of(), List.of(), null, false, T0);
        PluginHealth upgraded2 = new PluginHealth("p", "n3", PluginType.NODE, true, null, "hostpath.csi.example", "1.3.0",
                List.of(), List.of(), List.of(), null, false, T0);
        assertEquals("1.3.0", PluginStatusCalculator.calculate("p",
                List.of(instance(old, T0), instance(upgraded, T0)), T0).providerVersion());
        assertEquals("1.2.0", PluginStatusCalculator.calculate("p",
                List.of(instance(old, T0), instance(node("p", "n4", true, T0), T0), instance(upgraded, T0)), T0).providerVersion());
        assertEquals("1.3.0", PluginStatusCalculator.calculate("p",
                List.of(instance(old, T0), instance(upgraded, T0), instance(upgraded2, T0)), T0).providerVersion());
        assertEquals("hostpath.csi.example", PluginStatusCalculator.calculate("p", List.of(instance(old, T0)), T0).providerName());
    }

    @Test
    void theSameInstancesInAnyOrderGiveTheSameStatus() {
        List<PluginInstance> instances = List.of(
                instance(node("p", "b", true, T0), T0),
                instance(controller("p", "a", false, T0), T0),
                instance(monolith("p", "c", true, T0), T0));
        PluginStatus one = PluginStatusCalculator.calculate("p", instances, T0);
        PluginStatus other = PluginStatusCalculator.calculate("p", List.of(instances.get(2), instances.get(0), instances.get(1)), T0);
        assertEquals(one, other);
    }

    @Test
    void sameStatusIgnoresOnlyTimes() {
        PluginStatus before = PluginStatusCalculator.calculate("p", List.of(instance(node("p", "n", true, T0), T0)), T0);
        PluginStatus heartbeat = PluginStatusCalculator.calculate("p",
                List.of(instance(node("p", "n", true, T0.plusSeconds(30)), T0.plusSeconds(30))), T0.plusSeconds(30));
        PluginStatus unhealthy = PluginStatusCalculator.calculate("p",
                List.of(instance(node("p", "n", false, T0.plusSeconds(30)), T0.plusSeconds(30))), T0.plusSeconds(30));

        assertTrue(PluginStatusCalculator.sameStatus(before, heartbeat));
        assertFalse(PluginStatusCalculator.sameStatus(before, unhealthy));
    }

    @Test
    void refusesAnInstanceOfAnotherPlugin() {
        assertThrows(IllegalArgumentException.class, () -> PluginStatusCalculator.calculate("p",
                List.of(instance(node("q", "n", true, T0), T0)), T0));
    }
}
