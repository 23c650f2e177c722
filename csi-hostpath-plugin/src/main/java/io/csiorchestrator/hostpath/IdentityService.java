package io.csiorchestrator.hostpath;

import com.google.protobuf.BoolValue;
import io.csiorchestrator.csi.v1.GetPluginCapabilitiesRequest;
import io.csiorchestrator.csi.v1.GetPluginCapabilitiesResponse;
import io.csiorchestrator.csi.v1.GetPluginInfoRequest;
import io.csiorchestrator.csi.v1.GetPluginInfoResponse;
import io.csiorchestrator.csi.v1.IdentityGrpc;
import io.csiorchestrator.csi.v1.PluginCapability;
import io.csiorchestrator.csi.v1.ProbeRequest;
import io.csiorchestrator.csi.v1.ProbeResponse;
import io.csiorchestrator.hostpath.faults.FaultInjector;
import io.grpc.stub.StreamObserver;

/** CSI Identity: name and version, the controller service and accessibility constraints, readiness. */
final class IdentityService extends IdentityGrpc.IdentityImplBase {

    private final PluginOptions options;
    private final String version;
    private final FaultInjector faults;

    IdentityService(PluginOptions options, String version, FaultInjector faults) {
        this.options = options;
        this.version = version;
        this.faults = faults;
    }

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> observer) {
        GrpcCalls.answer(observer, () -> GetPluginInfoResponse.newBuilder()
                .setName(options.pluginName())
                .setVendorVersion(version)
                .putManifest("node-id", options.nodeId())
                .build());
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request,
                                      StreamObserver<GetPluginCapabilitiesResponse> observer) {
        GrpcCalls.answer(observer, () -> GetPluginCapabilitiesResponse.newBuilder()
                .addCapabilities(service(PluginCapability.Service.Type.CONTROLLER_SERVICE))
                .addCapabilities(service(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS))
                .addCapabilities(PluginCapability.newBuilder().setVolumeExpansion(PluginCapability.VolumeExpansion
                        .newBuilder().setType(options.offlineExpansion() ? PluginCapability.VolumeExpansion.Type.OFFLINE
                                : PluginCapability.VolumeExpansion.Type.ONLINE)))
                .build());
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
        GrpcCalls.answer(observer, () -> ProbeResponse.newBuilder()
                .setReady(BoolValue.of(!faults.probeNotReady()))
                .build());
    }

    private static PluginCapability service(PluginCapability.Service.Type type) {
        return PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder().setType(type)).build();
    }
}
