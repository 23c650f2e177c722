package io.csiorchestrator.claims.api;

import io.csiorchestrator.claims.capacity.CapacityView;
import io.csiorchestrator.events.PathSafeId;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * What this claim-service replica knows of the plugins' capacity (issue 34 item 2): {@link CapacityView}'s entries,
 * the newest GetCapacity figures per plugin and topology segment the workers reported on node-events. Read-only.
 */
@Path("/v1/capacity")
@Tag(name = "capacity", description = "This replica's view of the plugins' capacity per topology segment")
@Produces(MediaType.APPLICATION_JSON)
public class CapacityResource {

    @Inject
    CapacityView capacity;

    @GET
    @RolesAllowed({"plugin-read", "admin"})
    @Operation(summary = "Every plugin's capacity", description = "Per plugin and topology segment (empty: every node): "
            + "availableBytes, maximumVolumeBytes and minimumVolumeBytes when the plugin gave them, the node whose worker "
            + "reported it and when. This replica's view: the node-events partitions it reads.")
    public List<CapacityView.Entry> all() {
        return capacity.all();
    }

    @GET
    @Path("/{pluginId}")
    @RolesAllowed({"plugin-read", "admin"})
    @Operation(summary = "A plugin's capacity", description = "Its entries, one per topology segment; empty when no "
            + "worker reported one (the plugin does not advertise GET_CAPACITY, or no report reached this replica yet).")
    public List<CapacityView.Entry> of(@PathParam("pluginId") String pluginId) {
        var problem = PathSafeId.problem(pluginId);
        if (problem.isPresent()) {
            throw new BadRequestException("pluginId: " + problem.get());
        }
        return capacity.of(pluginId);
    }
}
