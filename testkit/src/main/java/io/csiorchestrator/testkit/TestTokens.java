package io.csiorchestrator.testkit;

import io.csiorchestrator.localinfra.AccessTokens;
import io.csiorchestrator.localinfra.AccessTokens.Claims;
import io.csiorchestrator.localinfra.AccessTokens.SigningKey;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Bearer tokens for the services' tests. The services' test profile accepts the key set
 * {@code csi-test-security/jwks.json} on this jar's class path ({@link #JWKS_RESOURCE}): the
 * {@link #PRIMARY} and {@link #SECONDARY} keys (a key roll in progress); {@link #STRANGER} is in no set.
 * Test-only keys: never used outside tests.
 */
public final class TestTokens {

    public static final String JWKS_RESOURCE = "csi-test-security/jwks.json";
    public static final SigningKey PRIMARY = load("primary.pem");
    public static final SigningKey SECONDARY = load("secondary.pem");
    public static final SigningKey STRANGER = load("stranger.pem");

    private TestTokens() {
    }

    /** An admin token for every namespace, valid for an hour: what tests that are not about security send. */
    public static String admin() {
        return issue(PRIMARY, Set.of("admin"), List.of(AccessTokens.ALL_NAMESPACES), Duration.ofHours(1));
    }

    /** {@code Authorization} header value of {@link #admin()}. */
    public static String adminBearer() {
        return "Bearer " + admin();
    }

    /** A token with these roles for these namespaces, valid for an hour, signed by the primary key. */
    public static String withRoles(Set<String> roles, List<String> namespaces) {
        return issue(PRIMARY, roles, namespaces, Duration.ofHours(1));
    }

    public static String issue(SigningKey key, Set<String> roles, List<String> namespaces, Duration ttl) {
        return AccessTokens.issue(key, Claims.of("test", roles, namespaces, ttl));
    }

    /** A token that expired {@code ago} ago (issued an hour before that). */
    public static String expired(Duration ago) {
        Instant issued = Instant.now().minus(ago).minus(Duration.ofHours(1));
        return AccessTokens.issue(PRIMARY, new Claims("test", Set.of("admin"), List.of(AccessTokens.ALL_NAMESPACES),
                issued, Duration.ofHours(1), UUID.randomUUID().toString()));
    }

    /** An admin token with this {@code jti} (for revocation tests). */
    public static String withJti(String jti) {
        return AccessTokens.issue(PRIMARY, new Claims("test", Set.of("admin"), List.of(AccessTokens.ALL_NAMESPACES),
                Instant.now(), Duration.ofHours(1), jti));
    }

    private static SigningKey load(String name) {
        try (InputStream in = TestTokens.class.getClassLoader().getResourceAsStream("csi-test-security/" + name)) {
            if (in == null) {
                throw new IllegalStateException("csi-test-security/" + name + " missing from the testkit jar");
            }
            return AccessTokens.readPrivatePem(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
