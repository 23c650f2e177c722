package io.csiorchestrator.claims.status;

import io.csiorchestrator.claims.api.TokenGrants;
import io.csiorchestrator.claims.store.PluginEntity;
import io.csiorchestrator.claims.store.Transactions;
import io.csiorchestrator.claims.store.VolumeConditionEntity;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginStatus;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.ForbiddenException;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import org.eclipse.microprofile.jwt.JsonWebToken;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.resteasy.reactive.RestStreamElementType;

/**
 * What the status page ({@code /status/}, static assets of this service) reads besides {@code /v1/volumes}: the
 * plugins as plugin-status last reported them, and the live feed (recent entries, and a server-sent event stream).
 */
@Path("/v1/status")
@Tag(name = "status", description = "The status page's data: plugins and the live event feed")
public class StatusResource {

    @Inject
    LiveFeed feed;

    @Inject
    StatusFeedReader reader;

    @Inject
    JsonWebToken token;

    @Inject
    Transactions transactions;

    /**
     * The conditions and the feed span every namespace, so they need a token for all of them ({@code "*"}), like
     * listing every volume would; a token for some namespaces gets 403 here (it still reads its volumes).
     */
    private void requireAllNamespaces() {
        if (!TokenGrants.namespaces(token).all()) {
            throw new ForbiddenException("the status feed and conditions span every namespace: they need a token "
                    + "whose namespaces claim is \"*\"");
        }
    }

    @GET
    @Path("/plugins")
    @RolesAllowed({"plugin-read", "admin"})
    @Produces(MediaType.APPLICATION_JSON)
    @Operation(summary = "Plugins", description = "Every plugin as plugin-registry-service last reported it on "
            + "plugin-status: healthy/expected controllers and nodes, each instance's node, health and last heartbeat.")
    public Uni<List<PluginStatus>> plugins() {
        return transactions.reading(PluginEntity::listAll)
                .map(rows -> rows.stream().map(r -> EventCodec.decode(PluginStatus.class, r.statusJson)).toList());
    }

    /** A volume's CSI condition on one node, as in {@code GET /v1/volumes/{namespace}/{id}}. */
    public record Condition(String volume, String nodeId, String condition, String message, java.time.Instant since) {
    }

    @GET
    @Path("/conditions")
    @RolesAllowed({"volume-read", "admin"})
    @Produces(MediaType.APPLICATION_JSON)
    @Operation(summary = "Volume conditions", description = "Every volume's CSI condition on each node where a "
            + "worker reported one (abnormal or normal), for the status page's volume list.")
    public Uni<List<Condition>> conditions() {
        requireAllNamespaces();
        return transactions.reading(VolumeConditionEntity::listAll)
                .map(rows -> rows.stream().map(c -> new Condition(c.volumeKey, c.nodeId, c.abnormal ? "abnormal" : "normal",
                        c.message, c.since)).toList());
    }

    @GET
    @Path("/feed")
    @RolesAllowed({"volume-read", "admin"})
    @Produces(MediaType.APPLICATION_JSON)
    @Operation(summary = "Recent events", description = "The last claim-status, node-events and plugin-status "
            + "events this instance read (at most " + LiveFeed.CAPACITY + "), oldest first.")
    public Uni<List<FeedEntry>> recent() {
        requireAllNamespaces();
        // the reader runs only while someone looks: this read starts it and waits for its read-back
        return Uni.createFrom().completionStage(reader.touched())
                .ifNoItem().after(StatusFeedReader.CATCH_UP_WAIT).recoverWithItem((Void) null)
                .map(v -> feed.recent());
    }

    @GET
    @Path("/events")
    @RolesAllowed({"volume-read", "admin"})
    @Produces(MediaType.SERVER_SENT_EVENTS)
    @RestStreamElementType(MediaType.APPLICATION_JSON)
    @Operation(summary = "Live events", description = "Server-sent events: one JSON feed entry per claim-status, "
            + "node-events or plugin-status event as this instance reads it from Kafka.")
    public Multi<FeedEntry> events() {
        requireAllNamespaces();
        // the reader runs while a stream is open (and a linger after the last one closed)
        return feed.stream().onSubscription().invoke(s -> reader.joined()).onTermination().invoke(reader::left);
    }
}
