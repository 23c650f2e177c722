package io.csiorchestrator.claims.status;

import io.csiorchestrator.claims.api.TokenGrants;
import jakarta.annotation.security.PermitAll;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.FormParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.NewCookie;
import jakarta.ws.rs.core.Response;
import java.util.Map;
import org.eclipse.microprofile.jwt.JsonWebToken;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The status page's login without copying a token (issue 35 item 1; claim-service README "Status page"): a one-time
 * code issued to a caller with a token ({@code ./csi status-page}), traded by the page for the cookie
 * {@code csi_token} (HttpOnly, SameSite=Strict, for the browser session). The token itself never travels in an
 * address, and the page's script never holds it.
 */
@Path("/v1/status")
@Tag(name = "status", description = "The status page's data: plugins and the live event feed")
public class StatusLoginResource {

    @Inject
    LoginCodes codes;

    @Inject
    JsonWebToken token;

    /** What the caller gets: the code, until when it is good, and the page's address with it (relative). */
    public record LoginCode(String code, java.time.Instant expiresAt, String link) {
        @Override
        public String toString() {
            return "LoginCode[code withheld, expiresAt=" + expiresAt + "]";
        }
    }

    @POST
    @Path("/login-codes")
    @RolesAllowed({"volume-read", "admin"})
    @Produces(MediaType.APPLICATION_JSON)
    @Operation(summary = "A one-time login code for the status page", description = "Good once, for 60 s, at this "
            + "instance: /status/#login=<code> logs the browser in with the caller's own token (the page needs one for "
            + "every namespace, like the feed).")
    public Response issue() {
        if (!TokenGrants.namespaces(token).all()) {
            return Response.status(Response.Status.FORBIDDEN).type(MediaType.APPLICATION_JSON).entity(Map.of("error",
                    "the status page spans every namespace: a login code needs a token whose namespaces claim is \"*\""))
                    .build();
        }
        Map.Entry<String, LoginCodes.Grant> issued = codes.issue(token.getRawToken());
        return Response.status(Response.Status.CREATED).entity(new LoginCode(issued.getKey(),
                issued.getValue().codeExpires(), "/status/#login=" + issued.getKey())).build();
    }

    @POST
    @Path("/login")
    @PermitAll
    @Consumes(MediaType.APPLICATION_FORM_URLENCODED)
    @Produces(MediaType.APPLICATION_JSON)
    @Operation(summary = "Trade a login code for the status page's cookie", description = "204 with cookie csi_token "
            + "(HttpOnly, SameSite=Strict, for the browser session); 401 if the code is unknown, used or expired.")
    public Response login(@FormParam("code") String code) {
        return codes.redeem(code).map(grant -> Response.noContent().cookie(new NewCookie.Builder("csi_token")
                .value(grant.token()).path("/").httpOnly(true).sameSite(NewCookie.SameSite.STRICT).build()).build())
                .orElseGet(() -> Response.status(Response.Status.UNAUTHORIZED).type(MediaType.APPLICATION_JSON)
                        .entity(Map.of("error", "this login link was used already or has expired (good once, for "
                                + LoginCodes.TTL.toSeconds() + " s): run ./csi status-page for a new one")).build());
    }
}
