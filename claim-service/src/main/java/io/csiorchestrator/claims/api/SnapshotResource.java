package io.csiorchestrator.claims.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.claims.provision.SnapshotService;
import io.csiorchestrator.claims.store.SnapshotEntity;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.Violation;
import io.csiorchestrator.events.Violations;
import io.smallrye.mutiny.Uni;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.eclipse.microprofile.jwt.JsonWebToken;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * Snapshots through the services (issue 14 item 2): CSI CreateSnapshot / DeleteSnapshot through a healthy controller
 * instance's node worker ({@link SnapshotService}). A restore is a volume created with {@code source: {"snapshot": id}}
 * (POST /v1/provisioned-volumes). The body's namespace is checked against the token; create and delete need
 * {@code volume-write} (or {@code admin}), reading {@code volume-read}.
 */
@Path("/v1/snapshots")
@Tag(name = "snapshots", description = "Snapshots of registered volumes, created and deleted by their plugin through the services")
@Produces(MediaType.APPLICATION_JSON)
public class SnapshotResource {

    @Inject
    SnapshotService snapshots;
    @Inject
    JsonWebToken token;

    /** A snapshot as it stands: phase, attempt, the plugin's id and size, the last error. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record SnapshotView(String namespace, String id, String sourceVolume, String pluginId, String csiName,
                               String phase, int attempt, String externalId, Long sizeBytes, String lastError,
                               Instant retryAt, Instant createdAt, Instant updatedAt) {
    }

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Snapshot a registered volume through its plugin", description = "Body: {\"namespace\", \"id\" (the "
            + "snapshot's), \"sourceVolume\" (a registered volume of the namespace), \"parameters\" and \"secrets\" (optional "
            + "objects of strings; the secrets are sealed at once and travel sealed to CreateSnapshot and DeleteSnapshot, "
            + "never shown)}. Recorded, "
            + "then CSI CreateSnapshot (name <namespace>.<id>) is sent to a healthy controller instance's node worker and "
            + "re-sent with backoff until the plugin says ready_to_use (phase created). Retried per the CSI error table; "
            + "the same request again answers 200 with the snapshot's state.")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(type = SchemaType.OBJECT, description = "one snapshot object")))
    @APIResponse(responseCode = "202", description = "Recorded; CreateSnapshot sent (or waiting for a controller)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = SnapshotView.class)))
    @APIResponse(responseCode = "200", description = "The same request was made before: the snapshot's state",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = SnapshotView.class)))
    @APIResponse(responseCode = "400", description = "Every problem, field by field",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @APIResponse(responseCode = "409", description = "The source volume is not registered, or the id is taken by another request",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @RolesAllowed({"volume-write", "admin"})
    public Uni<Response> create(String text) {
        JsonNode body;
        try {
            body = text == null || text.isBlank() ? null : EventCodec.mapper().readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            return Uni.createFrom().item(VolumeResource.notJson(e));
        }
        Violations v = new Violations();
        if (body == null || !body.isObject()) {
            v.add("(body)", null, "one snapshot object is required");
            return Uni.createFrom().item(VolumeResource.errors(Response.Status.BAD_REQUEST, "invalid snapshot", v.list()));
        }
        String namespace = body.path("namespace").asText("default");
        String id = body.path("id").asText(null);
        String source = body.path("sourceVolume").asText(null);
        Response refused = refused(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        v.id("namespace", namespace);
        v.id("id", id);
        v.id("sourceVolume", source);
        Map<String, String> parameters = new LinkedHashMap<>();
        JsonNode params = body.path("parameters");
        if (!params.isMissingNode() && !params.isNull()) {
            if (!params.isObject()) {
                v.add("parameters", params.toString(), "must be an object of strings");
            } else {
                params.fields().forEachRemaining(e -> parameters.put(e.getKey(), e.getValue().asText()));
                v.stringMap("parameters", parameters, 64);
            }
        }
        Map<String, String> secrets = VolumeRequestParser.map(body, "secrets", "", v, true);
        if (!v.list().isEmpty()) {
            return Uni.createFrom().item(VolumeResource.errors(Response.Status.BAD_REQUEST, "invalid snapshot", v.list()));
        }
        return snapshots.create(namespace, id, source, parameters, secrets, Tx.untraced()).map(outcome -> {
            if (outcome instanceof SnapshotService.Started s) {
                return Response.status(Response.Status.ACCEPTED).entity(view(s.snapshot())).build();
            }
            if (outcome instanceof SnapshotService.Unchanged u) {
                return Response.ok(view(u.snapshot())).build();
            }
            String reason = outcome instanceof SnapshotService.Refused r ? r.reason() : "not created";
            return VolumeResource.errors(Response.Status.CONFLICT, "snapshot not created",
                    List.of(new Violation("id", Violation.quote(namespace + "/" + id), reason)));
        });
    }

    @GET
    @Path("/{namespace}")
    @Operation(summary = "List a namespace's snapshots", description = "Every snapshot of the namespace created through the services, by id.")
    @APIResponse(responseCode = "200", description = "The snapshots",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.ARRAY, implementation = SnapshotView.class)))
    @RolesAllowed({"volume-read", "admin"})
    public Uni<Response> list(@PathParam("namespace") String namespace) {
        Response refused = refused(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        return snapshots.list(namespace).map(all -> Response.ok(all.stream().map(SnapshotResource::view).toList()).build());
    }

    @GET
    @Path("/{namespace}/{id}")
    @Operation(summary = "Read a snapshot", description = "Its phase (creating, created = ready to use, create-failed, "
            + "finding, deleting, delete-failed), attempt, the plugin's id and size, the last error.")
    @APIResponse(responseCode = "200", description = "The snapshot",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = SnapshotView.class)))
    @APIResponse(responseCode = "404", description = "No such snapshot",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @RolesAllowed({"volume-read", "admin"})
    public Uni<Response> get(@PathParam("namespace") String namespace, @PathParam("id") String id) {
        Response refused = refused(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        return snapshots.find(namespace, id).map(s -> s == null ? notFound(namespace, id) : Response.ok(view(s)).build());
    }

    @DELETE
    @Path("/{namespace}/{id}")
    @Operation(summary = "Delete a snapshot through its plugin", description = "Refused while it is being created or while "
            + "a volume is being created from it. CSI DeleteSnapshot is sent to a healthy controller instance's node "
            + "worker; on success (or NOT_FOUND) the snapshot is forgotten. A failed create is first looked up by name "
            + "(phase finding: CreateSnapshot again with the same name; a snapshot an earlier attempt made is then deleted).")
    @APIResponse(responseCode = "202", description = "Deleting (phase deleting, or finding for a failed create)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = SnapshotView.class)))
    @APIResponse(responseCode = "404", description = "No such snapshot",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @APIResponse(responseCode = "409", description = "Being created, or being restored (the volumes are named)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @RolesAllowed({"volume-write", "admin"})
    public Uni<Response> delete(@PathParam("namespace") String namespace, @PathParam("id") String id) {
        Response refused = refused(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        return snapshots.delete(namespace, id, Tx.untraced()).map(outcome -> {
            if (outcome instanceof SnapshotService.Started s) {
                return Response.status(Response.Status.ACCEPTED).entity(view(s.snapshot())).build();
            }
            if (outcome instanceof SnapshotService.Refused r) {
                return VolumeResource.errors(Response.Status.CONFLICT, "snapshot not deleted",
                        List.of(new Violation("snapshot", Violation.quote(namespace + "/" + id), r.reason())));
            }
            return notFound(namespace, id);
        });
    }

    static SnapshotView view(SnapshotEntity s) {
        return new SnapshotView(s.namespace, s.snapshotId, s.sourceVolumeKey.substring(s.sourceVolumeKey.indexOf('/') + 1),
                s.pluginId, s.csiName, s.phase.toLowerCase(Locale.ROOT).replace('_', '-'), s.attempt, s.externalId,
                s.sizeBytes, s.lastError, s.retryAt, s.createdAt, s.updatedAt);
    }

    private Response refused(List<String> wanted) {
        List<String> refused = TokenGrants.namespaces(token).refused(wanted);
        if (refused.isEmpty()) {
            return null;
        }
        return VolumeResource.errors(Response.Status.FORBIDDEN, "forbidden", refused.stream()
                .map(ns -> new Violation("namespace", Violation.quote(ns), "the token may not use this namespace")).toList());
    }

    private static Response notFound(String namespace, String id) {
        return VolumeResource.errors(Response.Status.NOT_FOUND, "no such snapshot",
                List.of(new Violation("snapshot", Violation.quote(namespace + "/" + id), "was not created through the services")));
    }
}
