package io.csiorchestrator.events;

import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A Kafka delegation token, the expiring credential of a node or a scheduler: the broker authenticates it as
 * SCRAM-SHA-512 with {@code tokenauth} (user name the token id, password its HMAC) and the principal is its
 * {@code owner}, so the owner's ACLs apply. The broker refuses it once {@code expires} has passed or once it was
 * expired early (revoked); a renewal moves {@code expires} on, up to the token's maximum lifetime, without changing
 * the HMAC.
 *
 * <p>Its file ({@code csi.kafka.token-file}), readable by its owner only:
 * <pre>
 * owner=node-1
 * token-id=...
 * hmac=...
 * expires=2026-12-28T10:00:00Z
 * </pre>
 * {@link #toString()} never shows the HMAC.
 */
public record KafkaToken(String owner, String tokenId, String hmac, Instant expires) {

    private static final String USER = "[A-Za-z0-9][A-Za-z0-9._-]{0,127}";

    public KafkaToken {
        if (owner == null || !owner.matches(USER)) {
            throw new IllegalArgumentException("invalid Kafka token owner " + Violation.quote(String.valueOf(owner)));
        }
        if (tokenId == null || !tokenId.matches("[A-Za-z0-9._~+/=-]{1,256}")) {
            throw new IllegalArgumentException("invalid Kafka token id " + Violation.quote(String.valueOf(tokenId)));
        }
        if (hmac == null || hmac.isEmpty() || hmac.chars().anyMatch(c -> c <= 0x20 || c == 0x7f)) {
            throw new IllegalArgumentException("a Kafka token's hmac must be non-empty printable text");
        }
        Objects.requireNonNull(expires, "expires");
    }

    /** The file's text (see the class comment). */
    public String toFileText() {
        return "# Kafka delegation token of " + owner + ": a secret, keep this file 0600\n"
            + "owner=" + owner + "\ntoken-id=" + tokenId + "\nhmac=" + hmac + "\nexpires=" + expires + "\n";
    }

    /** Parses {@link #toFileText()}'s form; {@code source} names the file in errors. */
    public static KafkaToken parse(String text, String source) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            String l = line.strip();
            if (l.isEmpty() || l.startsWith("#")) {
                continue;
            }
            int eq = l.indexOf('=');
            if (eq < 1) {
                throw new IllegalArgumentException(source + ": a line without key=value (line starts "
                    + Violation.quote(l.substring(0, Math.min(l.length(), 12))) + ")");
            }
            fields.put(l.substring(0, eq).strip(), l.substring(eq + 1).strip());
        }
        for (String key : new String[] {"owner", "token-id", "hmac", "expires"}) {
            if (!fields.containsKey(key)) {
                throw new IllegalArgumentException(source + ": no " + key + "=");
            }
        }
        Instant expires;
        try {
            expires = Instant.parse(fields.get("expires"));
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(source + ": expires " + Violation.quote(fields.get("expires"))
                + " is not an ISO-8601 instant");
        }
        try {
            return new KafkaToken(fields.get("owner"), fields.get("token-id"), fields.get("hmac"), expires);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage(), e);
        }
    }

    /** The token in {@code file}; refused if others than its owner may read or write the file. */
    public static KafkaToken read(Path file) {
        return parse(KafkaClientSecurity.readOwnerOnly(KafkaClientSecurity.TOKEN_FILE, file),
            KafkaClientSecurity.TOKEN_FILE + " " + file);
    }

    @Override
    public String toString() {
        return "KafkaToken[" + tokenId + " of " + owner + ", expires " + expires + "]";
    }
}
