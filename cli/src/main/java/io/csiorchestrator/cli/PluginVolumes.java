package io.csiorchestrator.cli;

import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.VolumeCapability;
import java.nio.file.Path;
import java.time.Duration;
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
        VolumeCapability capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.getDefaultInstance())
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.MULTI_NODE_SINGLE_WRITER))
                .build();
        CreateVolumeRequest request = CreateVolumeRequest.newBuilder().setName(name)
                .addVolumeCapabilities(capability).build();
        String externalId = null;
        for (Path socket : sockets) {
            try (CsiPluginClient client = CsiPluginClient.connect(socket, CsiClientOptions.defaults())
                    .await().atMost(Duration.ofSeconds(30))) {
                String id = client.createVolume(request).await().atMost(Duration.ofSeconds(60)).getVolume().getVolumeId();
                if (externalId != null && !externalId.equals(id)) {
                    throw new IllegalStateException("the plugins gave different ids: " + externalId + " and " + id);
                }
                externalId = id;
            }
        }
        return externalId;
    }
}
