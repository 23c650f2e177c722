package io.csiorchestrator.claims.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.csiorchestrator.claims.Secrets;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.claims.api.VolumeRequestParser.VolumeSpec;
import io.csiorchestrator.claims.provision.ProvisionService;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.ProvisionEntity;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.SecretPayload;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import org.eclipse.microprofile.jwt.JsonWebToken;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * Volumes created and deleted through the services (issue 14): CSI CreateVolume / DeleteVolume through a healthy
 * controller instance's node worker ({@link ProvisionService}). The body's namespace is checked against the token
 * like a registration's; create and delete need {@code volume-write} (or {@code admin}), reading {@code volume-read}.
 */
@Path("/v1/provisioned-volumes")
@Tag(name = "provisioned volumes", description = "Volumes created and deleted by their plugin through the services")
@Produces(MediaType.APPLICATION_JSON)
public class ProvisionResource {

    /** The fields of a create body beside a registration's (which has no externalId here: the plugin gives it). */
    static final List<String> CAPACITY_FIELDS = List.of("capacityMin", "capacityMax");

    @Inject
    ProvisionService provisions;
    @Inject
    Secrets secrets;
    @Inject
    JsonWebToken token;

    /**
     * A provisioned volume as it stands: phase, attempt, the plugin's answer, the last error; for an expansion the
     * capacity asked for, the nodes still to expand, the capacity the plugin asked nodes to expand to
     * ({@code nodeExpandBytes}, absent when none is owed) and the capacity each node's NodeExpandVolume reached.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ProvisionView(String namespace, String id, String pluginId, String csiName, String phase, int attempt,
                                Long capacityMinBytes, Long capacityMaxBytes, String externalId, Long capacityBytes,
                                Long expandToBytes, List<String> expandNodes, Long nodeExpandBytes,
                                java.util.Map<String, Long> nodeExpandedBytes,
                                String lastError, Instant retryAt, Instant createdAt, Instant updatedAt,
                                VolumeResource.ConditionView listing) {
    }

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Create a volume through its plugin", description = "The fields of a registration (POST /v1/volumes) "
            + "without externalId, plus capacityMin and capacityMax (bytes, or a size such as \"1GiB\", \"500MiB\", \"2G\") "
            + "and an optional source {\"volume\": \"<id>\"}: a clone of a registered volume of the same namespace, or "
            + "{\"snapshot\": \"<id>\"}: a restore of a ready snapshot of the same namespace and plugin (POST /v1/snapshots). "
            + "The request is recorded, then CSI CreateVolume (name <namespace>.<id>) is sent to a healthy controller "
            + "instance's node worker; on success the volume is registered with the plugin's id, context and topology. "
            + "Retried per the CSI error table; the same request again answers 200 with the volume's state.")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(type = SchemaType.OBJECT, description = "one volume object")))
    @APIResponse(responseCode = "202", description = "Recorded; CreateVolume sent (or waiting for a controller)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = ProvisionView.class)))
    @APIResponse(responseCode = "200", description = "The same request was made before: the volume's state",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = ProvisionView.class)))
    @APIResponse(responseCode = "400", description = "Every problem, field by field (secret values and mount flags redacted)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @APIResponse(responseCode = "409", description = "The volume is registered already, or provisioned with another spec",
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
            v.add("(body)", null, "one volume object is required");
            return Uni.createFrom().item(VolumeResource.errors(Response.Status.BAD_REQUEST, "invalid volume creation", v.list()));
        }
        ObjectNode registration = ((ObjectNode) body).deepCopy();
        if (registration.has("externalId")) {
            v.add("externalId", Violation.quote(registration.get("externalId").asText()), "is given by the plugin; leave it out");
        }
        String sourceVolume = null;
        String sourceSnapshot = null;
        JsonNode source = registration.remove("source");
        if (source != null && !source.isNull()) {
            JsonNode volume = source.path("volume");
            JsonNode snapshot = source.path("snapshot");
            JsonNode given = volume.isTextual() ? volume : snapshot;
            if (!source.isObject() || !given.isTextual() || source.size() != 1) {
                v.add("source", source.toString(), "must be {\"volume\": \"<id of a registered volume in the same namespace>\"}"
                        + " or {\"snapshot\": \"<id of a snapshot in the same namespace>\"}");
            } else if (!io.csiorchestrator.events.PathSafeId.isValid(given.asText())) {
                v.add(volume.isTextual() ? "source.volume" : "source.snapshot", Violation.quote(given.asText()), "is not a valid id");
            } else if (volume.isTextual()) {
                sourceVolume = volume.asText();
            } else {
                sourceSnapshot = snapshot.asText();
            }
        }
        Long min = capacity(registration.remove("capacityMin"), "capacityMin", v);
        Long max = capacity(registration.remove("capacityMax"), "capacityMax", v);
        if (min != null && max != null && max > 0 && max < min) {
            v.add("capacityMax", max.toString(), "must not be below capacityMin (" + min + ")");
        }
        registration.put("externalId", "to-be-created");
        VolumeRequestParser.Parsed parsed = VolumeRequestParser.parse(registration);
        List<String> namespaces = parsed.volumes().stream().map(VolumeSpec::namespace).toList();
        Response refused = refused(namespaces.isEmpty() ? List.of(registration.path("namespace").asText("default")) : namespaces);
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        List<Violation> problems = new ArrayList<>(v.list());
        problems.addAll(parsed.problems());
        if (!problems.isEmpty()) {
            return Uni.createFrom().item(VolumeResource.errors(Response.Status.BAD_REQUEST, "invalid volume creation", problems));
        }
        ProvisionEntity request = toEntity(parsed.volumes().get(0), min, max);
        return provisions.create(request, sourceVolume, sourceSnapshot, Tx.untraced()).map(outcome -> {
            if (outcome instanceof ProvisionService.Started s) {
                return Response.status(Response.Status.ACCEPTED).entity(view(s.provision())).build();
            }
            if (outcome instanceof ProvisionService.Unchanged u) {
                return Response.ok(view(u.provision())).build();
            }
            String reason = outcome instanceof ProvisionService.Refused r ? r.reason() : "not created";
            return VolumeResource.errors(Response.Status.CONFLICT, "volume not created",
                    List.of(new Violation("id", Violation.quote(request.volumeKey), reason)));
        });
    }

    @GET
    @Path("/{namespace}/{id}")
    @Operation(summary = "Read a provisioned volume", description = "Its phase (creating, created, create-failed, finding, "
            + "deleting, delete-failed, expanding, node-expanding, expand-failed), attempt, the plugin's id and capacity, the "
            + "capacity the last expansion asked for (expandToBytes), the nodes still to expand (expandNodes), the capacity "
            + "the plugin asked every node where the volume is published to expand to (nodeExpandBytes; absent when no node "
            + "expansion is owed) and the capacity each node's NodeExpandVolume reached (nodeExpandedBytes), the last error, "
            + "and listing: {condition: abnormal, message: \"volume not listed by plugin P since T\", since} while the "
            + "plugin's last complete ListVolumes did not list it (a mark only: nothing is deleted for it).")
    @APIResponse(responseCode = "200", description = "The provision",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = ProvisionView.class)))
    @APIResponse(responseCode = "404", description = "No volume of this namespace and id was created through the services",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @RolesAllowed({"volume-read", "admin"})
    public Uni<Response> get(@PathParam("namespace") String namespace, @PathParam("id") String id) {
        Response refused = refused(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        return provisions.find(namespace, id).map(p -> p == null ? notFound(namespace, id) : Response.ok(view(p)).build());
    }

    @DELETE
    @Path("/{namespace}/{id}")
    @Operation(summary = "Delete a provisioned volume through its plugin", description = "Refused while the volume is "
            + "claimed or still being created. New claims are rejected at once; CSI DeleteVolume is sent to a healthy "
            + "controller instance's node worker; on success (or NOT_FOUND) the volume is deregistered. A volume whose "
            + "create failed is first looked up by name (phase finding: CreateVolume again with the same name; a volume an "
            + "earlier attempt made is then deleted by its id; a fatal answer forgets the record).")
    @APIResponse(responseCode = "202", description = "Deleting (phase deleting, or finding for a failed create)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = ProvisionView.class)))
    @APIResponse(responseCode = "404", description = "No volume of this namespace and id was created through the services",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @APIResponse(responseCode = "409", description = "Claimed (the allocations are named) or still being created",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @RolesAllowed({"volume-write", "admin"})
    public Uni<Response> delete(@PathParam("namespace") String namespace, @PathParam("id") String id) {
        Response refused = refused(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        return provisions.delete(namespace, id, Tx.untraced()).map(outcome -> {
            if (outcome instanceof ProvisionService.Started s) {
                return Response.status(Response.Status.ACCEPTED).entity(view(s.provision())).build();
            }
            if (outcome instanceof ProvisionService.Refused r) {
                return VolumeResource.errors(Response.Status.CONFLICT, "volume not deleted",
                        List.of(new Violation("volume", Violation.quote(namespace + "/" + id), r.reason())));
            }
            return notFound(namespace, id);
        });
    }

    @POST
    @Path("/{namespace}/{id}/expand")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Expand a provisioned volume through its plugin", description = "Body {\"capacity\": <bytes, or a "
            + "size such as \"2GiB\">}. CSI ControllerExpandVolume is sent to a healthy controller instance's node worker "
            + "(phase expanding); when the plugin answers node_expansion_required, NodeExpandVolume follows on each node "
            + "where a claim of the volume is ready, one node after the other, by that node's worker at the volume's target "
            + "and staging path (phase node-expanding); then the phase is created again with the new capacityBytes. Claims "
            + "keep working throughout (online expansion); a claim that becomes ready later on a node not expanded yet gets "
            + "NodeExpandVolume there (resize on mount). Retried per the CSI error table; FAILED_PRECONDITION from "
            + "NodeExpandVolume is never retried (CSI): the phase becomes expand-failed with the plugin's message, the "
            + "volume stays usable, and the same request again starts over. The same capacity as the volume's answers 200. "
            + "Each end (expanded with the new capacity, expand-failed with the reason) is published for schedulers on "
            + "volume-status. A plugin that expands offline only (VolumeExpansion OFFLINE) cannot expand a claimed volume: "
            + "409 naming the plugin, the volume and its claims; release the claims first.")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(type = SchemaType.OBJECT, description = "{\"capacity\": \"2GiB\"}")))
    @APIResponse(responseCode = "202", description = "Recorded; ControllerExpandVolume sent (or waiting for a controller)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = ProvisionView.class)))
    @APIResponse(responseCode = "200", description = "The volume has this capacity already",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = ProvisionView.class)))
    @APIResponse(responseCode = "400", description = "No or a bad capacity, a capacity below the volume's (field capacity), "
            + "or a plugin without the EXPAND_VOLUME controller capability (field plugin)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @APIResponse(responseCode = "404", description = "No volume of this namespace and id was created through the services",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @APIResponse(responseCode = "409", description = "The volume is being created, deleted or expanded, or it is claimed "
            + "and its plugin expands volumes offline only",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeResource.Errors.class)))
    @RolesAllowed({"volume-write", "admin"})
    public Uni<Response> expand(@PathParam("namespace") String namespace, @PathParam("id") String id, String text) {
        Response refused = refused(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        JsonNode body;
        try {
            body = text == null || text.isBlank() ? null : EventCodec.mapper().readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            return Uni.createFrom().item(VolumeResource.notJson(e));
        }
        Violations v = new Violations();
        Long bytes = body == null || !body.isObject() ? null : capacity(body.get("capacity"), "capacity", v);
        if (bytes == null && v.list().isEmpty()) {
            v.add("capacity", null, "is required: a number of bytes or a size such as \"2GiB\"");
        }
        if (!v.list().isEmpty()) {
            return Uni.createFrom().item(VolumeResource.errors(Response.Status.BAD_REQUEST, "invalid volume expansion", v.list()));
        }
        return provisions.expand(namespace, id, bytes, Tx.untraced()).map(outcome -> {
            if (outcome instanceof ProvisionService.Started s) {
                return Response.status(Response.Status.ACCEPTED).entity(view(s.provision())).build();
            }
            if (outcome instanceof ProvisionService.Unchanged u) {
                return Response.ok(view(u.provision())).build();
            }
            if (outcome instanceof ProvisionService.Invalid bad) {
                return VolumeResource.errors(Response.Status.BAD_REQUEST, "invalid volume expansion",
                        List.of(new Violation(bad.field(), Violation.quote(bad.value()), bad.reason())));
            }
            if (outcome instanceof ProvisionService.Refused r) {
                return VolumeResource.errors(Response.Status.CONFLICT, "volume not expanded",
                        List.of(new Violation("volume", Violation.quote(namespace + "/" + id), r.reason())));
            }
            return notFound(namespace, id);
        });
    }

    /**
     * A capacity: a whole number of bytes, or a size with a unit (K, M, G, T: powers of 1000; KiB, MiB, GiB, TiB:
     * powers of 1024; B or none: bytes). Null when absent.
     */
    static Long capacity(JsonNode node, String field, Violations v) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (node.isIntegralNumber()) {
            if (node.asLong() < 0) {
                v.add(field, node.asText(), "must not be negative");
                return null;
            }
            return node.asLong();
        }
        if (!node.isTextual()) {
            v.add(field, node.toString(), "must be a number of bytes or a size such as \"1GiB\"");
            return null;
        }
        Long parsed = parseSize(node.asText());
        if (parsed == null) {
            v.add(field, Violation.quote(node.asText()), "must be a number of bytes or a size such as \"1GiB\", \"500MiB\", \"2G\"");
        }
        return parsed;
    }

    /** {@code "1GiB"} -> 1073741824; null when it is no size. */
    public static Long parseSize(String text) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*(\\d{1,15})\\s*([KMGT]i?)?B?\\s*$",
                java.util.regex.Pattern.CASE_INSENSITIVE).matcher(text);
        if (!m.matches()) {
            return null;
        }
        long value = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "" : m.group(2).toUpperCase(Locale.ROOT);
        if (unit.isEmpty()) {
            return value;
        }
        long base = unit.endsWith("I") ? 1024 : 1000;
        int power = "KMGT".indexOf(unit.charAt(0)) + 1;
        long factor = 1;
        for (int i = 0; i < power; i++) {
            factor *= base;
        }
        return Math.multiplyExact(value, factor);
    }

    private ProvisionEntity toEntity(VolumeSpec spec, Long min, Long max) {
        ProvisionEntity p = new ProvisionEntity();
        p.volumeKey = VolumeEntity.key(spec.namespace(), spec.id());
        p.namespace = spec.namespace();
        p.volumeId = spec.id();
        p.csiName = spec.namespace() + "." + spec.id();
        p.pluginId = spec.pluginId();
        p.name = spec.name();
        p.accessMode = spec.accessMode().wire();
        p.attachmentMode = spec.attachmentMode().wire();
        p.fsType = spec.fsType();
        p.mountFlagCount = spec.mountFlags().size();
        p.parametersJson = Json.write(spec.parameters());
        p.topologyJson = Json.write(spec.topology());
        p.secretKeysJson = Json.write(new TreeSet<>(spec.secrets().keySet()));
        p.sealedJson = secrets.sealToJson(new SecretPayload(spec.secrets(), spec.mountFlags()), spec.namespace(), spec.id());
        p.failover = spec.failover() == null ? null : spec.failover().wire();
        p.capacityMinBytes = min;
        p.capacityMaxBytes = max;
        return p;
    }

    static ProvisionView view(ProvisionEntity p) {
        return new ProvisionView(p.namespace, p.volumeId, p.pluginId, p.csiName, p.phase.toLowerCase(Locale.ROOT).replace('_', '-'),
                p.attempt, p.capacityMinBytes, p.capacityMaxBytes, p.externalId, p.capacityBytes, p.expandToBytes,
                Json.list(p.expandNodesJson).isEmpty() ? null : Json.list(p.expandNodesJson), p.nodeExpandBytes,
                Json.longs(p.nodeSizesJson).isEmpty() ? null : Json.longs(p.nodeSizesJson), p.lastError, p.retryAt,
                p.createdAt, p.updatedAt, VolumeResource.listing(p));
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
        return VolumeResource.errors(Response.Status.NOT_FOUND, "no such provisioned volume",
                List.of(new Violation("volume", Violation.quote(namespace + "/" + id), "was not created through the services")));
    }
}
