package io.csiorchestrator.claims.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.csiorchestrator.claims.Fencing;
import io.csiorchestrator.claims.domain.FenceTimers;
import io.csiorchestrator.claims.domain.LeaseBook;
import io.csiorchestrator.events.PathSafeId;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * What this claim-service replica knows of a node's lease (issue 19): the newest epoch and state it received on
 * {@code node-leases}, and the fence wait a claim mounted at that epoch is in. Read-only; the registry's REST is the
 * authority on leases.
 */
@Path("/v1/node-leases")
@Tag(name = "node leases", description = "This replica's view of the node leases")
@Produces(MediaType.APPLICATION_JSON)
public class NodeLeaseResource {

    @Inject
    Fencing fencing;

    /**
     * @param fenceWait what a write claim on the node mounted at this epoch waits for: "none" (assumed detached now),
     *                  else the reason, e.g. "waiting for node-1's lease to lapse: 41 s left"
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record LeaseView(String nodeId, long epoch, String state, String fenceWait, String failoverWait, String floor) {
    }

    @GET
    @Path("/{nodeId}")
    @RolesAllowed({"plugin-read", "admin"})
    @Operation(summary = "A node's lease as this replica knows it", description = "404 when no lease of the node was received.")
    public LeaseView lease(@PathParam("nodeId") String nodeId) {
        var problem = PathSafeId.problem(nodeId);
        if (problem.isPresent()) {
            throw new BadRequestException("nodeId: " + problem.get());
        }
        LeaseBook.Entry e = fencing.book().entry(nodeId);
        if (e == null) {
            throw new NotFoundException("no lease of node " + nodeId + " was received");
        }
        FenceTimers timers = fencing.timers();
        LeaseBook.Verdict v = fencing.book().verdict(nodeId, e.epoch(), timers, fencing.now());
        return new LeaseView(nodeId, e.epoch(), e.state().name().toLowerCase(),
                v instanceof LeaseBook.Verdict.Fenced ? "none" : v.reason(),
                FenceTimers.text(timers.effectiveFailoverWait()), FenceTimers.text(timers.floor()));
    }
}
