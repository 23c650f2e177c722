package io.csiorchestrator.cli;

import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.ListVolumesResponse;
import io.csiorchestrator.csi.v1.VolumeCapability;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** CSI CreateVolume straight on plugin sockets (the local system has no provisioner service). */
final class PluginVolumes {

    private PluginVolumes() {
    }

    /**
     * Creates {@code name} on every socket (same name, same id: the hostpath plugins of the local
     * system share their volume directories but each keeps its own state) and returns the plugin's id.
     */
    static String create(String name, List<Path> sockets) {
        return createAll(List.of(name), sockets).get(name);
    }

    /** {@link #create} of every name, one connection per socket; returns each name's plugin volume id. */
    static java.util.Map<String, String> createAll(List<String> names, List<Path> sockets) {
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.MULTI_NODE_SINGLE_WRITER))
                .build();
        java.util.Map<String, String> ids = new java.util.LinkedHashMap<>();
        for (Path socket : sockets) {
            try (CsiPluginClient client = CsiPluginClient.connect(socket, CsiClientOptions.defaults())
                    .await().atMost(Duration.ofSeconds(30))) {
                for (String name : names) {
                    CreateVolumeRequest request = CreateVolumeRequest.newBuilder().setName(name)
                            .addVolumeCapabilities(capability).build();
                    String id = client.createVolume(request).await().atMost(Duration.ofSeconds(60)).getVolume()
                            .getVolumeId();
                    String before = ids.putIfAbsent(name, id);
                    if (before != null && !before.equals(id)) {
                        throw new IllegalStateException("the plugins gave " + name + " different ids: " + before
                                + " and " + id);
                    }
                }
            }
        }
        return ids;
    }

    /**
     * The node ids the plugin on {@code socket} holds controller publications of volume {@code externalId} for
     * (CSI ListVolumes' published_node_ids); empty when the volume is not published or unknown.
     */
    static List<String> publishedNodes(String externalId, Path socket) {
        try (CsiPluginClient client = CsiPluginClient.connect(socket, CsiClientOptions.defaults())
                .await().atMost(Duration.ofSeconds(30))) {
            List<String> nodes = new ArrayList<>();
            String token = "";
            do {
                ListVolumesResponse page = client.listVolumes(ListVolumesRequest.newBuilder().setStartingToken(token).build())
                        .await().atMost(Duration.ofSeconds(30));
                page.getEntriesList().stream().filter(e -> e.getVolume().getVolumeId().equals(externalId))
                        .forEach(e -> nodes.addAll(e.getStatus().getPublishedNodeIdsList()));
                token = page.getNextToken();
            } while (!token.isEmpty());
            return nodes;
        }
    }
}
