package io.csiorchestrator.cli;

import io.csiorchestrator.localinfra.AccessTokens;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ./csi token}: issue a bearer token signed with the work dir's key ({@code <work>/security/signing.pem}),
 * revoke one by its id, roll the signing key. README "Security".
 */
final class TokenCommand {

    static final Set<String> OPTIONS = Set.of("work-dir", "role", "namespace", "ttl", "subject", "retire");

    private final Args args;
    private final Path securityDir;
    private final PrintStream out;
    private final PrintStream err;

    TokenCommand(Args args, Path home, PrintStream out, PrintStream err) {
        this.args = args;
        this.securityDir = Up.workDir(args, home).resolve(Cluster.SECURITY_DIR);
        this.out = out;
        this.err = err;
    }

    int run() throws IOException {
        String verb = args.positional(0, "token command (init, issue, revoke, roll-key)");
        return switch (verb) {
            case "init" -> init();
            case "issue" -> issue();
            case "revoke" -> revoke(args.atMost(2).positional(1, "token id (jti)"));
            case "roll-key" -> rollKey();
            default -> throw new Args.UsageException("unknown command 'token " + verb + "'");
        };
    }

    /**
     * Makes the key set (kept if there) and an admin token in the work dir without starting anything: for a
     * system started otherwise (docker compose: {@code --work-dir .csi/compose}).
     */
    private int init() throws IOException {
        args.atMost(1);
        AccessTokens.SigningKey key = AccessTokens.ensureKeySet(securityDir);
        Path work = securityDir.getParent();
        AccessTokens.writePrivate(work.resolve(Cluster.ADMIN_TOKEN), AccessTokens.issue(key, AccessTokens.Claims.of(
                "csi-admin", Set.of("admin"), List.of(AccessTokens.ALL_NAMESPACES), Cluster.ADMIN_TOKEN_TTL)) + "\n");
        out.println("key set " + securityDir.resolve("jwks.json") + " (give it to the services: CSI_JWT_PUBLIC_KEYS),"
                + " signing key " + securityDir.resolve("signing.pem") + " (0600), admin token "
                + work.resolve(Cluster.ADMIN_TOKEN) + " (0600, 30 days)");
        return 0;
    }

    /** Prints the token on stdout (nothing else there), its id and expiry on stderr. */
    private int issue() throws IOException {
        args.atMost(1);
        Set<String> roles = new LinkedHashSet<>(split(args.required("role")));
        for (String role : roles) {
            if (!AccessTokens.ROLES.contains(role)) {
                throw new Args.UsageException("unknown role '" + role + "'; roles: "
                        + String.join(", ", AccessTokens.ROLES.stream().sorted().toList()));
            }
        }
        List<String> namespaces = args.option("namespace").map(TokenCommand::split)
                .orElse(List.of(AccessTokens.ALL_NAMESPACES));
        Duration ttl = ttl(args.option("ttl").orElse("8h"));
        AccessTokens.SigningKey key = signingKey();
        AccessTokens.Claims claims = AccessTokens.Claims.of(args.option("subject").orElse("csi-cli"), roles, namespaces, ttl);
        out.println(AccessTokens.issue(key, claims));
        err.println("token id " + claims.jti() + ", roles " + roles + ", namespaces " + namespaces + ", expires "
                + claims.issuedAt().plus(ttl) + " (key " + key.kid() + ")");
        return 0;
    }

    /** Appends the id to the revoked-tokens file the services read again when it changes. */
    private int revoke(String jti) throws IOException {
        if (!jti.matches("[A-Za-z0-9._-]{1,128}")) {
            throw new Args.UsageException("not a token id: '" + jti + "'");
        }
        Files.createDirectories(securityDir);
        Files.writeString(securityDir.resolve("revoked-tokens"), jti + "\n", StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        out.println("revoked token " + jti + " (" + securityDir.resolve("revoked-tokens") + "; the services read it again"
                + " on their next request)");
        return 0;
    }

    private int rollKey() throws IOException {
        args.atMost(1);
        boolean retire = args.flag("retire");
        AccessTokens.SigningKey key = AccessTokens.roll(securityDir, retire);
        out.println(retire
                ? "key set is now only the signing key " + key.kid() + " (tokens of retired keys are refused once the"
                        + " services restart)"
                : "signing with new key " + key.kid() + "; the previous key stays in the set (tokens it signed keep"
                        + " working). Restart the services one by one to load the set, then `token roll-key --retire`"
                        + " once the old tokens have expired");
        return 0;
    }

    private AccessTokens.SigningKey signingKey() throws IOException {
        Path pem = securityDir.resolve("signing.pem");
        if (!Files.isRegularFile(pem)) {
            throw new Args.UsageException("no signing key at " + pem + " (./csi up makes one; --work-dir D for another)");
        }
        return AccessTokens.readPrivatePem(Files.readString(pem));
    }

    private static List<String> split(String value) {
        return Arrays.stream(value.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
    }

    /** {@code 8h}, {@code 30m}, {@code 7d}, {@code 90s}. */
    static Duration ttl(String value) {
        Matcher m = Pattern.compile("(\\d+)(s|m|h|d)").matcher(value.strip());
        if (!m.matches() || Long.parseLong(m.group(1)) == 0) {
            throw new Args.UsageException("--ttl takes a duration like 8h, 30m or 7d, not '" + value + "'");
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
        };
    }
}
