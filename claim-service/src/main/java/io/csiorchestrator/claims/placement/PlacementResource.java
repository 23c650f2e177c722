package io.csiorchestrator.claims.placement;

import io.csiorchestrator.events.Placement;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The placement entries as claim-service last wrote them to the {@code placement} topic (issue 34): what
 * {@code ./csi node status} and the status page show, the same a scheduler reading the topic sees.
 */
@Path("/v1/status/placement")
@Tag(name = "status", description = "The status page's data: plugins and the live event feed")
public class PlacementResource {

    @Inject
    PlacementPublisher publisher;

    @GET
    @RolesAllowed({"plugin-read", "admin"})
    @Produces(MediaType.APPLICATION_JSON)
    @Operation(summary = "Placement", description = "Every placement entry this instance last wrote: per node and "
            + "plugin the accessible topology, the volume limit (maxVolumes, 0 = none), the volumes held (claims in flight "
            + "included) and health; per plugin and topology segment the capacity. Without updatedAt.")
    public List<Placement> placement() {
        return publisher.entries();
    }
}
