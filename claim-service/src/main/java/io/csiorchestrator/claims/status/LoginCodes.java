package io.csiorchestrator.claims.status;

import jakarta.enterprise.context.ApplicationScoped;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The status page's one-time login codes (issue 35 item 1): {@code ./csi status-page} asks for one with its bearer
 * token and opens {@code /status/#login=<code>}; the page trades the code once for the cookie {@code csi_token}
 * holding that token. A code is 256 random bits, good once and for {@link #TTL}; this instance keeps it in memory only
 * (a code is redeemed at the instance that issued it), at most {@link #MAX_OPEN} at a time (the oldest go first).
 */
@ApplicationScoped
public class LoginCodes {

    /** Long enough to open the link the CLI printed or opened; short, since the link may sit in a terminal. */
    public static final Duration TTL = Duration.ofSeconds(60);
    /** Codes issued and not yet redeemed nor expired; issuing needs a valid token, so this only bounds memory. */
    public static final int MAX_OPEN = 100;

    /** What a code stands for: the token it was issued with, and until when the code itself is good. */
    public record Grant(String token, Instant codeExpires) {
        @Override
        public String toString() {
            return "Grant[token withheld, codeExpires=" + codeExpires + "]";
        }
    }

    private final SecureRandom random = new SecureRandom();
    private final Clock clock;
    private final Map<String, Grant> open = new LinkedHashMap<>();

    public LoginCodes() {
        this(Clock.systemUTC());
    }

    LoginCodes(Clock clock) {
        this.clock = clock;
    }

    /** A new code standing for {@code token}, good once until the grant's {@code codeExpires}. */
    public synchronized Map.Entry<String, Grant> issue(String token) {
        if (token == null || token.isBlank()) {
            throw new IllegalArgumentException("a login code needs the caller's token");
        }
        dropExpired();
        while (open.size() >= MAX_OPEN) {
            Iterator<String> oldest = open.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
        byte[] bytes = new byte[32];
        random.nextBytes(bytes);
        String code = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
        Grant grant = new Grant(token, clock.instant().plus(TTL));
        open.put(code, grant);
        return Map.entry(code, grant);
    }

    /** The grant of {@code code}, once: empty if it is unknown, was redeemed already, or expired. */
    public synchronized Optional<Grant> redeem(String code) {
        if (code == null) {
            return Optional.empty();
        }
        Grant grant = open.remove(code);
        return grant != null && clock.instant().isBefore(grant.codeExpires()) ? Optional.of(grant) : Optional.empty();
    }

    private void dropExpired() {
        Instant now = clock.instant();
        open.values().removeIf(g -> !now.isBefore(g.codeExpires()));
    }
}
