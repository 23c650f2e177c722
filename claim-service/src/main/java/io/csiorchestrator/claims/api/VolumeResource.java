package io.csiorchestrator.claims.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.claims.Secrets;
import io.csiorchestrator.claims.Tx;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.context.Context;
import io.csiorchestrator.claims.api.VolumeRequestParser.VolumeSpec;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.Transactions;
import io.csiorchestrator.claims.store.VolumeConditionEntity;
import io.csiorchestrator.claims.store.VolumeUsageEntity;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.claims.store.VolumeRows;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.Violation;
import io.smallrye.mutiny.Uni;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import org.eclipse.microprofile.jwt.JsonWebToken;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Volumes: register, list, read (secrets and mount flags redacted), delete, and the operator's
 * detach escape hatch. Every call needs a bearer token (README "Security"): its roles pick the operations
 * ({@code @RolesAllowed}; a forced delete needs {@code admin}), its {@code namespaces} claim the namespaces of
 * the path and of every volume in the body ({@link NamespaceGrant}; 403 otherwise).
 */
@Path("/v1/volumes")
@Tag(name = "volumes", description = "Volume registration and operator actions")
@Produces(MediaType.APPLICATION_JSON)
public class VolumeResource {

    public static final String REDACTED = Violation.REDACTED;

    @Inject
    ClaimService claims;
    @Inject
    io.csiorchestrator.claims.ClaimFences fences;
    @Inject
    Plugins plugins;
    @Inject
    Transactions transactions;
    @Inject
    Secrets secrets;
    @Inject
    OpenTelemetry openTelemetry;
    @Inject
    JsonWebToken token;

    /** A 400/404/409 body: what is wrong, field by field. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Problem(String field, String value, String message) {
    }

    public record Errors(String error, List<Problem> problems) {
    }

    public record Registered(List<String> registered) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record VolumeStub(String namespace, String id, String name, String pluginId, String accessMode,
                             String attachmentMode, String claimedAccessMode, int currentReaders, int currentWriters,
                             boolean schedulable, String health, boolean deleting, String failover) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ClaimView(String allocationId, String nodeId, String mode, String state, String requestId,
                            String releaseRequestId, String accessMode, String attachmentMode, boolean readOnly,
                            String hostPath, String lastError, int attempt, Instant createdAt, Instant endedAt,
                            Instant waitingForPluginSince, Instant waitingForPluginUntil, Instant pendingUntil) {
    }

    public record MountOptionsView(String fsType, List<String> mountFlags) {
    }

    /**
     * The volume's CSI condition on one node where it is claimed, as that node's worker last reported it
     * (VOLUME_CONDITION through NodeGetVolumeStats): {@code condition} is {@code abnormal} or {@code normal},
     * {@code message} the plugin's, {@code since} when the worker saw it begin.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ConditionView(String nodeId, String pluginId, String condition, String message, Instant since) {
    }

    /**
     * The volume's usage on one node where it is claimed, as that node's worker last reported it (NodeGetVolumeStats,
     * issue 34; sent when a figure moved noticeably: about 1% of the total): bytes and inodes as kubelet's
     * kubelet_volume_stats_* name them; a figure the plugin does not report is absent.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record UsageView(String nodeId, String pluginId, Long capacityBytes, Long availableBytes, Long usedBytes,
                            Long inodes, Long inodesFree, Long inodesUsed, Instant observedAt) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record VolumeDetail(String namespace, String id, String name, String externalId, String pluginId,
                               String accessMode, String attachmentMode, String claimedAccessMode,
                               MountOptionsView mountOptions, Map<String, String> parameters, Map<String, String> context,
                               Map<String, String> secrets, Map<String, String> topology, boolean schedulable, String health,
                               boolean deleting, List<ClaimView> claims, List<ClaimView> pastClaims,
                               List<ConditionView> conditions, String failover, ConditionView listing,
                               List<UsageView> usage) {
    }

    public record Released(String volume, String action, List<String> allocations) {
    }

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Register volumes", description = "One volume object, a list, or {\"volumes\": [...]}. Secrets and "
            + "mount flags are sealed at rest and never returned. Optional failover: fence (default) or manual (issue 19:"
            + " a manual volume's writer node is never fenced by a lease lapse; another node gets it only after that node's"
            + " unmount or an operator's forced detach).")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(type = SchemaType.OBJECT, description = "a volume, a list of volumes, or {\"volumes\": [...]}")))
    @APIResponse(responseCode = "201", description = "Registered (namespace/id of each)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Registered.class)))
    @APIResponse(responseCode = "400", description = "Every problem of every volume, field by field (secret values and mount flags redacted)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @APIResponse(responseCode = "409", description = "A volume with this namespace and id is already registered",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @RolesAllowed({"volume-write", "admin"})
    public Uni<Response> register(String text) {
        JsonNode body;
        try {
            body = text == null || text.isBlank() ? null : io.csiorchestrator.events.EventCodec.mapper().readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            return Uni.createFrom().item(notJson(e));
        }
        VolumeRequestParser.Parsed parsed = VolumeRequestParser.parse(body);
        Response refused = refusedNamespaces(parsed.volumes().stream().map(VolumeSpec::namespace).toList());
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        if (!parsed.problems().isEmpty()) {
            return Uni.createFrom().item(errors(Response.Status.BAD_REQUEST, "invalid volume registration", parsed.problems()));
        }
        List<String> keys = parsed.volumes().stream().map(s -> VolumeEntity.key(s.namespace(), s.id())).toList();
        // the new volumes are the claim transaction's own, inserted when it ends
        return claims.inTransaction(() -> VolumeRows.findAll(keys).map(existing -> {
            if (!existing.isEmpty()) {
                List<Violation> conflicts = existing.stream()
                        .map(v -> new Violation("id", Violation.quote(v.volumeKey), "a volume with this namespace and id is already registered"))
                        .toList();
                return errors(Response.Status.CONFLICT, "volume already registered", conflicts);
            }
            for (VolumeSpec spec : parsed.volumes()) {
                ClaimStore.current().insert(toEntity(spec));
            }
            return Response.status(Response.Status.CREATED).entity(new Registered(keys)).build();
        }));
    }

    @GET
    @Operation(summary = "List volumes", description = "Stubs of every volume, or of one namespace's.")
    @APIResponse(responseCode = "200", description = "The volumes",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = SchemaType.ARRAY, implementation = VolumeStub.class)))
    @APIResponse(responseCode = "403", description = "The token may not read this namespace",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @RolesAllowed({"volume-read", "admin"})
    public Uni<Response> list(@QueryParam("namespace") String namespace) {
        NamespaceGrant grant = grant();
        if (namespace != null) {
            Response refused = refusedNamespaces(List.of(namespace));
            if (refused != null) {
                return Uni.createFrom().item(refused);
            }
        }
        return listVisible(namespace, grant).map(stubs -> Response.ok(stubs).build());
    }

    /** The stubs of {@code namespace} (every namespace when null) that {@code grant} allows. */
    private Uni<List<VolumeStub>> listVisible(String namespace, NamespaceGrant grant) {
        return transactions.readingOneSnapshot(() -> VolumeRows.list(namespace)
                .chain(volumes -> VolumeRows.currentClaims()
                        .chain(active -> plugins.facts(volumes.stream().map(v -> v.pluginId).collect(Collectors.toSet()))
                                .map(facts -> volumes.stream().filter(v -> grant.allows(v.namespace)).map(v -> VolumeViews.stub(v,
                                        active.stream().filter(c -> c.volumeKey.equals(v.volumeKey)).toList(),
                                        facts.get(v.pluginId))).toList()))));
    }

    @GET
    @Path("/{namespace}/{id}")
    @Operation(summary = "Read a volume", description = "Everything but secret values and mount flags, with its current and past "
            + "claims, its CSI condition on each node where it is claimed (conditions), its usage there (usage: bytes and "
            + "inodes from NodeGetVolumeStats, issue 34) and, for a volume created through the "
            + "services that its plugin's last complete ListVolumes did not list, listing: {pluginId, condition: abnormal, "
            + "message: \"volume not listed by plugin P since T\", since} (a mark only: nothing is deleted for it).")
    @APIResponse(responseCode = "200", description = "The volume",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = VolumeDetail.class)))
    @APIResponse(responseCode = "404", description = "No such volume",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @RolesAllowed({"volume-read", "admin"})
    public Uni<Response> get(@PathParam("namespace") String namespace, @PathParam("id") String id) {
        Response refused = refusedNamespaces(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        return transactions.readingOneSnapshot(() -> VolumeRows.find(VolumeEntity.key(namespace, id)).chain(v -> {
            if (v == null) {
                return Uni.createFrom().item(notFound(namespace, id));
            }
            return VolumeRows.claimsOf(v.volumeKey)
                    .chain(all -> VolumeConditionEntity.ofVolume(v.volumeKey)
                            .chain(conditions -> plugins.facts(v.pluginId)
                                    .chain(plugin -> VolumeViews.provisionListing(v.volumeKey)
                                            .chain(listing -> VolumeUsageEntity.ofVolume(v.volumeKey)
                                                    .map(usage -> Response.ok(VolumeViews.detail(v, all, plugin, conditions,
                                                            listing, usage)).build())))));
        }));
    }

    @DELETE
    @Path("/{namespace}/{id}")
    @Operation(summary = "Delete a volume", description = "Refused while claimed unless force=true, which releases every "
            + "claim; the volume goes when the last one is released.")
    @APIResponse(responseCode = "204", description = "Deleted")
    @APIResponse(responseCode = "202", description = "Forced: releasing every claim",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Released.class)))
    @APIResponse(responseCode = "404", description = "No such volume",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @APIResponse(responseCode = "409", description = "The volume is claimed (the claims are listed); release them or use force=true",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @RolesAllowed({"volume-write", "admin"})
    public Uni<Response> delete(@PathParam("namespace") String namespace, @PathParam("id") String id,
                                @QueryParam("force") boolean force) {
        Response refused = refusedNamespaces(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        if (force && !token.getGroups().contains("admin")) {
            return Uni.createFrom().item(errors(Response.Status.FORBIDDEN, "forbidden",
                    List.of(new Violation("force", "true", "a forced delete needs role admin"))));
        }
        Tx tx = Tx.causedBy(openTelemetry, Context.current());
        return claims.inTransaction(tx, () -> claims.lockVolume(VolumeEntity.key(namespace, id)).chain(v -> {
            if (v == null) {
                return Uni.createFrom().item(notFound(namespace, id));
            }
            return ClaimService.activeClaims(v.volumeKey).chain(active -> {
                if (active.isEmpty()) {
                    return ClaimStore.current().deleteVolume(v).map(x -> Response.noContent().build());
                }
                if (!force) {
                    List<Violation> held = active.stream().map(c -> new Violation("claims", Violation.quote(c.allocationId),
                            c.mode.wire() + " claim on node " + c.nodeId + " (" + c.phase.name().toLowerCase() + ")")).toList();
                    return Uni.createFrom().item(errors(Response.Status.CONFLICT,
                            "volume " + v.volumeKey + " is claimed; release the claims or delete with ?force=true", held));
                }
                v.deleting = true;
                Uni<Void> chain = Uni.createFrom().voidItem();
                for (ClaimEntity c : active) {
                    chain = chain.chain(() -> claims.releaseLocked(v, c, tx));
                }
                List<String> allocations = active.stream().map(c -> c.allocationId).toList();
                return chain.map(x -> Response.accepted(new Released(v.volumeKey,
                        "releasing every claim; the volume is deleted once the last one is released", allocations)).build());
            });
        }));
    }

    @POST
    @Path("/{namespace}/{id}/detach")
    @Operation(summary = "Detach a node", description = "Without force: the node's claims of the volume are released like"
            + " an allocation's release: the node is sent its unmounts and the claims are freed only when it reports them"
            + " unmounted, or once its lease lapsed and the fence wait passed (issue 19); a node whose lease already lapsed"
            + " past the fence wait is assumed detached at once. With force=true: every claim of the volume on the node is"
            + " assumed detached at once (controller-unpublish still sent when owed) - only if the node is powered off; the"
            + " claim-status reason records who forced it.")
    @APIResponse(responseCode = "202", description = "Detaching (or, forced, detached)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Released.class)))
    @APIResponse(responseCode = "400", description = "Invalid node id",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @APIResponse(responseCode = "404", description = "No such volume",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Errors.class)))
    @RolesAllowed({"volume-detach", "admin"})
    public Uni<Response> detach(@PathParam("namespace") String namespace, @PathParam("id") String id,
                                @QueryParam("node") String node, @QueryParam("force") boolean force,
                                @jakarta.ws.rs.core.Context jakarta.ws.rs.core.SecurityContext security) {
        Response refused = refusedNamespaces(List.of(namespace));
        if (refused != null) {
            return Uni.createFrom().item(refused);
        }
        if (force && (security == null || !security.isUserInRole("admin"))) {
            // a forced detach may make two writers if the node is in fact alive: admin only (issue 20's roles)
            return Uni.createFrom().item(errors(Response.Status.FORBIDDEN, "forbidden", List.of(new Violation("force",
                    "true", "a forced detach needs the admin role (only if the node is powered off)"))));
        }
        var problem = PathSafeId.problem(node);
        if (problem.isPresent()) {
            return Uni.createFrom().item(errors(Response.Status.BAD_REQUEST, "invalid detach",
                    List.of(new Violation("node", Violation.quote(node), problem.get()))));
        }
        String principal = security == null || security.getUserPrincipal() == null
                || security.getUserPrincipal().getName() == null || security.getUserPrincipal().getName().isBlank()
                ? "anonymous" : security.getUserPrincipal().getName();
        Tx tx = Tx.causedBy(openTelemetry, Context.current());
        return claims.inTransaction(tx, () -> claims.lockVolume(VolumeEntity.key(namespace, id)).chain(v -> {
            if (v == null) {
                return Uni.createFrom().item(notFound(namespace, id));
            }
            return ClaimService.activeClaims(v.volumeKey).chain(active -> {
                List<ClaimEntity> onNode = active.stream().filter(c -> c.nodeId.equals(node)).toList();
                String forced = "detach of node " + node + " from volume " + v.volumeKey + " forced by " + principal
                        + ", only if the node is powered off: the node is assumed detached";
                Uni<Void> chain = Uni.createFrom().voidItem();
                for (ClaimEntity c : onNode) {
                    chain = chain.chain(() -> force ? fences.detachLocked(v, c, forced, tx)
                            : fences.operatorDetachLocked(v, c, tx));
                }
                String action = force ? "forced detach of node " + node + " by " + principal + " (only if the node is powered off)"
                        : "detaching node " + node + ": unmounts sent; the claims are freed when the node reports them"
                        + " unmounted, or once its lease lapsed and the fence wait passed";
                return chain.map(x -> Response.accepted(new Released(v.volumeKey, action,
                        onNode.stream().map(c -> c.allocationId).toList())).build());
            });
        }));
    }

    private NamespaceGrant grant() {
        return TokenGrants.namespaces(token);
    }

    /** 403 naming the namespaces of {@code wanted} the token may not touch, or null when it may touch them all. */
    private Response refusedNamespaces(List<String> wanted) {
        List<String> refused = grant().refused(wanted);
        if (refused.isEmpty()) {
            return null;
        }
        return errors(Response.Status.FORBIDDEN, "forbidden", refused.stream()
                .map(ns -> new Violation("namespace", Violation.quote(ns), "the token may not use this namespace")).toList());
    }

    /** A body that is not JSON: where it breaks, never what it says (it may hold secrets). */
    static Response notJson(com.fasterxml.jackson.core.JsonProcessingException e) {
        var at = e.getLocation();
        String where = at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
        return errors(Response.Status.BAD_REQUEST, "invalid volume registration",
                List.of(new Violation("(body)", Violation.REDACTED, "is not valid JSON" + where)));
    }

    private VolumeEntity toEntity(VolumeSpec spec) {
        Instant now = Instant.now();
        VolumeEntity v = new VolumeEntity();
        v.volumeKey = VolumeEntity.key(spec.namespace(), spec.id());
        v.namespace = spec.namespace();
        v.id = spec.id();
        v.name = spec.name();
        v.externalId = spec.externalId();
        v.pluginId = spec.pluginId();
        v.accessMode = spec.accessMode().wire();
        v.attachmentMode = spec.attachmentMode().wire();
        v.failover = spec.failover() == null ? null : spec.failover().wire();
        v.fsType = spec.fsType();
        v.mountFlagCount = spec.mountFlags().size();
        v.parametersJson = Json.write(spec.parameters());
        v.contextJson = Json.write(spec.context());
        v.topologyJson = Json.write(spec.topology());
        v.secretKeysJson = Json.write(new TreeSet<>(spec.secrets().keySet()));
        v.sealedJson = secrets.sealToJson(new SecretPayload(spec.secrets(), spec.mountFlags()), spec.namespace(), spec.id());
        v.createdAt = now;
        v.updatedAt = now;
        return v;
    }

    /**
     * The ListVolumes comparison of a volume created through the services (issue 14): abnormal, "volume not listed by
     * plugin P since T", while its plugin's last complete ListVolumes did not list it; null otherwise.
     */
    public static ConditionView listing(io.csiorchestrator.claims.store.ProvisionEntity p) {
        return p == null ? null : VolumeViews.listing(p.pluginId, p.unlistedSince);
    }

    private static Response notFound(String namespace, String id) {
        return errors(Response.Status.NOT_FOUND, "no such volume",
                List.of(new Violation("volume", Violation.quote(namespace + "/" + id), "is not registered")));
    }

    static Response errors(Response.Status status, String error, List<Violation> problems) {
        List<Problem> list = problems.stream().map(p -> new Problem(p.field(), p.value(), p.reason())).toList();
        return Response.status(status).type(MediaType.APPLICATION_JSON).entity(new Errors(error, list)).build();
    }
}
