package io.csiorchestrator.testkit;

import io.quarkus.test.junit.callback.QuarkusTestBeforeEachCallback;
import io.quarkus.test.junit.callback.QuarkusTestMethodContext;
import io.restassured.RestAssured;
import io.restassured.filter.Filter;
import java.util.List;

/**
 * Every REST call of a module's Quarkus tests that names no {@code Authorization} header carries an admin
 * bearer token (the service refuses calls without one), except in test classes marked
 * {@link SendsOwnCredentials}. A module turns it on by naming it in its test resources'
 * META-INF/services/io.quarkus.test.junit.callback.QuarkusTestBeforeEachCallback (claim-service and
 * plugin-registry-service do).
 */
public class AdminTokenByDefault implements QuarkusTestBeforeEachCallback {

    private static final Filter ADMIN = (request, response, context) -> {
        if (!request.getHeaders().hasHeaderWithName("Authorization")) {
            request.header("Authorization", TestTokens.adminBearer());
        }
        return context.next(request, response);
    };

    @Override
    public void beforeEach(QuarkusTestMethodContext context) {
        boolean own = context.getTestInstance().getClass().isAnnotationPresent(SendsOwnCredentials.class);
        RestAssured.replaceFiltersWith(own ? List.of() : List.of(ADMIN));
    }
}
