package io.csiorchestrator.claims;

import io.csiorchestrator.claims.api.VolumeResource;
import io.csiorchestrator.claims.messaging.ClaimRequestedDeserializer;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * What a native image needs for reflection beyond what Quarkus finds itself: every class Jackson
 * (de)serializes here. The REST bodies are built as {@code Response} entities, so Quarkus REST cannot see
 * their types from the method signatures. The JSON text columns ({@code store.Json}) hold only JDK maps
 * and lists of strings; the sealed secrets ({@code SealedSecrets}) and the stored plugin-status
 * ({@code PluginStatus}) are events-schema records, registered by events-schema's reflect-config.json.
 * {@code NativeReflectionTest} fails when a REST record is missing here.
 */
@RegisterForReflection(targets = {
        VolumeResource.Problem.class,
        VolumeResource.Errors.class,
        VolumeResource.Registered.class,
        VolumeResource.VolumeStub.class,
        VolumeResource.ClaimView.class,
        VolumeResource.MountOptionsView.class,
        VolumeResource.VolumeDetail.class,
        VolumeResource.ConditionView.class,
        VolumeResource.UsageView.class,
        io.csiorchestrator.claims.capacity.CapacityView.Entry.class,
        VolumeResource.Released.class,
        io.csiorchestrator.claims.api.ProvisionResource.ProvisionView.class,
        io.csiorchestrator.claims.api.SnapshotResource.SnapshotView.class,
        // The status page's data (StatusResource: JSON and server-sent events).
        io.csiorchestrator.claims.status.FeedEntry.class,
        io.csiorchestrator.claims.status.StatusResource.Condition.class,
        // Kafka instantiates the channel's value deserializer by its configured class name.
        ClaimRequestedDeserializer.class,
        io.csiorchestrator.support.security.RawValue.Deserializer.class,
})
public final class NativeReflection {

    private NativeReflection() {
    }
}
