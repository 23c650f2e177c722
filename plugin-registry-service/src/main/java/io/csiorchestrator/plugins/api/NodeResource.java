package io.csiorchestrator.plugins.api;

import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.Violation;
import io.csiorchestrator.plugins.lease.LeaseAuthority;
import io.csiorchestrator.plugins.lease.LeaseBook;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** Nodes and their leases (issue 19 item 8), as this registry instance knows them. */
@Path("/v1/nodes")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "nodes", description = "Nodes and their leases")
public class NodeResource {

    /** A node's lease: {@code expiresAt} is the registry's estimate (last grant + ttl x (1 + drift)), while valid. */
    public record LeaseView(long epoch, String state, Instant lastRenewedAt, Instant expiresAt, long fencedEpoch) {
    }

    /**
     * @param authority whether this instance owns the node's partition of node-lease-requests (it answers the node's
     *                  requests and declares its lapses: its view is current); false: another replica's node, shown as
     *                  this one loaded or saw it last
     */
    public record NodeView(String nodeId, LeaseView lease, boolean authority) {
    }

    @Inject
    LeaseAuthority leases;

    @GET
    @RolesAllowed({"plugin-read", "admin"})
    @Operation(summary = "Every node that asked for a lease, with its lease")
    public List<NodeView> list() {
        return leases.all().stream().map(this::view).toList();
    }

    @GET
    @Path("/{nodeId}")
    @RolesAllowed({"plugin-read", "admin"})
    @Operation(summary = "One node with its lease")
    public Response get(@PathParam("nodeId") String nodeId) {
        Optional<String> problem = PathSafeId.problem(nodeId);
        if (problem.isPresent()) {
            return Response.status(Response.Status.BAD_REQUEST).type(MediaType.APPLICATION_JSON)
                    .entity(new PluginViews.ApiError("invalid request",
                            List.of(new PluginViews.Problem("nodeId", Violation.quote(nodeId), problem.get()))))
                    .build();
        }
        return leases.get(nodeId).map(v -> Response.ok(view(v)).build())
                .orElseGet(() -> Response.status(Response.Status.NOT_FOUND).type(MediaType.APPLICATION_JSON)
                        .entity(new PluginViews.ApiError("node " + Violation.quote(nodeId) + " has no lease", List.of()))
                        .build());
    }

    private NodeView view(LeaseBook.View v) {
        Instant expires = v.state() == NodeLeaseState.VALID ? leases.expiresAt(v) : null;
        return new NodeView(v.nodeId(), new LeaseView(v.epoch(), v.state().wire(), v.lastRenewedAt(), expires,
                v.fencedEpoch()), leases.owns(v.nodeId()));
    }
}
