package io.csiorchestrator.plugins.api;

import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.Violation;
import io.csiorchestrator.plugins.store.PluginInstanceRow;
import io.csiorchestrator.plugins.store.PluginStore;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The registry over HTTP: every plugin with its counts, and one plugin with every instance. A bearer token with
 * role {@code plugin-read} or {@code admin} reads them (README "Security").
 */
@Path("/v1/plugins")
@RolesAllowed({"plugin-read", "admin"})
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "plugins", description = "CSI plugins, their instances per node and their health")
public class PluginResource {

    @Inject
    Pool pool;
    @Inject
    PluginStore store;

    @GET
    @Operation(summary = "Every plugin with its healthy and expected controllers and nodes, by id")
    @APIResponse(responseCode = "200", content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = PluginViews.PluginSummary.class, type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.ARRAY)))
    public Uni<List<PluginViews.PluginSummary>> list() {
        return store.all(pool)
                .map(rows -> rows.stream().map(PluginViews.PluginSummary::of).toList());
    }

    @GET
    @Path("/{id}")
    @Operation(summary = "One plugin with every instance on every node")
    @APIResponse(responseCode = "200", content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = PluginViews.PluginDetail.class)))
    @APIResponse(responseCode = "400", description = "the id is not a valid plugin id",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = PluginViews.ApiError.class)))
    @APIResponse(responseCode = "404", description = "no such plugin",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = PluginViews.ApiError.class)))
    public Uni<Response> get(@PathParam("id") String id) {
        Optional<String> problem = PathSafeId.problem(id);
        if (problem.isPresent()) {
            return Uni.createFrom().item(error(Response.Status.BAD_REQUEST, "invalid request",
                    List.of(new PluginViews.Problem("id", Violation.quote(id), problem.get()))));
        }
        // The plugin's counts and its instances from one snapshot, so that they agree.
        return pool.withTransaction(tx -> store.readOneSnapshot(tx).chain(() -> store.find(tx, id)).chain(row -> row == null || row.removed
                ? Uni.createFrom().item(error(Response.Status.NOT_FOUND, "plugin " + Violation.quote(id) + " not found", List.of()))
                : store.instances(tx, id).map(rows -> Response.ok(PluginViews.PluginDetail.of(row,
                        rows.stream().map(PluginInstanceRow::toInstance).toList())).build())));
    }

    private static Response error(Response.Status status, String message, List<PluginViews.Problem> problems) {
        return Response.status(status).type(MediaType.APPLICATION_JSON)
                .entity(new PluginViews.ApiError(message, problems)).build();
    }
}
