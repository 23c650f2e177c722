package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.KafkaToken;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.BrokerSecurity;
import io.csiorchestrator.localinfra.KafkaUsers;
import io.csiorchestrator.localinfra.KafkaMain;
import io.csiorchestrator.localinfra.Kraft;

/**
 * {@code ./csi kafka-credential}: the expiring Kafka credentials of nodes and schedulers (issue 20 item 8), Kafka
 * delegation tokens issued, renewed and revoked by the broker's admin ({@value KafkaAccess#ADMIN}, whose password
 * and CA {@code ./csi up} keeps under {@code <work>/kafka/security/}):
 * <ul>
 *   <li>{@code issue node:<id>|scheduler:<id> [--ttl 30d] [--out F]}: the principal's ACLs and a new token, written
 *       0600 to F (default {@code <work>/kafka-credentials/<principal>.token}); the worker or scheduler reads it as
 *       {@code CSI_KAFKA_TOKEN_FILE}. Prints the token's id and expiry, never its HMAC;</li>
 *   <li>{@code renew --token-file F [--ttl 30d]}: the token lives that much longer from now (never past the lifetime
 *       it was issued with); the file's expiry is updated, the HMAC stays, so its holder needs no restart;</li>
 *   <li>{@code revoke node:<id>|scheduler:<id>}: every token of the principal expires now (new logins refused at once,
 *       open connections at their next re-authentication);</li>
 *   <li>{@code list node:<id>|scheduler:<id>}: the principal's live tokens and their expiry.</li>
 * </ul>
 *
 * <p>{@code --kind cert} (issue 33): a TLS client certificate instead of a token, for the broker's client-certificate
 * listener ({@link CertificateCredential}): {@code issue P --kind cert [--ttl 30d] [--out DIR]} writes
 * {@code kafka-client.key}, {@code kafka-client.pem} and {@code ca.pem} (0600) into DIR (default
 * {@code <work>/kafka-credentials/<principal>/}); {@code renew P --kind cert} is a new key and certificate in the same
 * place (the old one stays valid until it expires or is revoked). {@code revoke P} revokes both kinds: the tokens
 * expire, the certificates go on the broker's revoked list, and the principal's ACLs are dropped (open connections
 * lose their rights at once; a later {@code issue} grants them again, and the revoked certificates stay refused).
 */
final class KafkaCredentialCommand {

    static final Set<String> OPTIONS = Set.of("work-dir", "ttl", "out", "token-file", "kafka", "topic-prefix", "kind");
    static final Duration DEFAULT_TTL = Duration.ofDays(30);

    private final Args args;
    private final Path work;
    private final Endpoints endpoints;
    private final PrintStream out;

    KafkaCredentialCommand(Args args, Path home, PrintStream out) {
        this.args = args;
        this.work = Up.workDir(args, home);
        this.endpoints = Endpoints.resolve(args, System.getenv(), home);
        this.out = out;
    }

    int run() {
        String verb = args.positional(0, "kafka-credential command (issue, renew, revoke, list)");
        return switch (verb) {
            case "issue" -> issue(principal());
            case "renew" -> certificateKind() ? issueCertificate(principal(), "renewed") : renew();
            case "revoke" -> {
                KafkaAccess.Principal p = principal();
                int n = withUsers(users -> users.revokeTokens(p.name()));
                int certs = CertificateCredential.authority(work).map(a -> {
                    withUsers(users -> users.dropAcls(p.name()));
                    return a.revoke(p.name());
                }).orElse(0);
                out.println(p.name() + ": revoked " + n + " token" + (n == 1 ? "" : "s")
                        + " (new logins refused now, open connections at their next re-authentication) and " + certs
                        + " certificate" + (certs == 1 ? "" : "s") + (CertificateCredential.authority(work).isPresent()
                        ? " (its ACLs dropped: open connections refused now; the broker refuses the certificates"
                        + " within seconds, also after a new issue)" : ""));
                yield 0;
            }
            case "list" -> {
                KafkaAccess.Principal p = principal();
                var tokens = withUsers(users -> users.tokensOf(p.name()));
                for (var t : tokens) {
                    out.println(p.name() + "\t" + t.tokenId() + "\texpires " + Instant.ofEpochMilli(
                            Math.min(t.expiryTimestamp(), t.maxTimestamp())));
                }
                if (tokens.isEmpty()) {
                    out.println(p.name() + ": no live token");
                }
                yield 0;
            }
            default -> throw new Args.UsageException("unknown command 'kafka-credential " + verb + "'");
        };
    }

    private boolean certificateKind() {
        String kind = args.option("kind").orElse("token");
        return switch (kind) {
            case "token" -> false;
            case "cert" -> true;
            default -> throw new Args.UsageException("--kind is token or cert, not '" + kind + "'");
        };
    }

    private int issueCertificate(KafkaAccess.Principal principal, String what) {
        Duration ttl = ttl();
        Path dir = args.option("out").map(Path::of).orElse(CertificateCredential.defaultDir(work, principal.name()));
        CertificateCredential.Files files = withUsers(users -> CertificateCredential.issue(work, users, principal,
                catalog(), ttl, dir));
        out.println(principal.name() + ": certificate " + what + ", serial " + files.serial() + ", expires "
                + files.expires() + ", in " + dir + " (0600)");
        out.println("  give it to that " + (principal.role() == KafkaAccess.Role.NODE ? "worker" : "scheduler") + " as "
                + KafkaClientSecurity.envName(KafkaClientSecurity.CERTIFICATE_FILE) + "=" + files.certificate() + " "
                + KafkaClientSecurity.envName(KafkaClientSecurity.KEY_FILE) + "=" + files.key() + " "
                + KafkaClientSecurity.envName(KafkaClientSecurity.TRUSTSTORE) + "=" + files.ca()
                + CertificateCredential.bootstrap(work).map(b -> ", bootstrap " + b).orElse(""));
        return 0;
    }

    private int issue(KafkaAccess.Principal principal) {
        if (certificateKind()) {
            return issueCertificate(principal, "issued");
        }
        Duration ttl = ttl();
        Path file = args.option("out").map(Path::of)
                .orElse(CliKafkaSecurity.tokenFile(work, principal.name()));
        KafkaToken token = withUsers(users -> {
            users.grant(principal, catalog());
            return users.issueToken(principal.name(), ttl);
        });
        write(file, token);
        out.println(principal.name() + ": token " + token.tokenId() + " expires " + token.expires() + ", in " + file
                + " (0600: give it to that " + (principal.name().startsWith("node-") ? "worker" : "scheduler")
                + " as CSI_KAFKA_TOKEN_FILE)");
        return 0;
    }

    private int renew() {
        args.atMost(1);
        Path file = Path.of(args.option("token-file").orElseThrow(() ->
                new Args.UsageException("kafka-credential renew needs --token-file F (the token to renew)")));
        KafkaToken token;
        try {
            token = KafkaToken.read(file);
        } catch (IllegalArgumentException e) {
            throw new Args.UsageException(e.getMessage());
        }
        Duration ttl = ttl();
        KafkaToken renewed = withUsers(users -> users.renewToken(token, ttl));
        write(file, renewed);
        out.println(token.owner() + ": token " + token.tokenId() + " now expires " + renewed.expires()
                + (renewed.expires().isBefore(Instant.now().plus(ttl).minusSeconds(60))
                        ? " (the end of the lifetime it was issued with: issue a new one before then)" : ""));
        return 0;
    }

    private KafkaAccess.Principal principal() {
        String text = args.atMost(2).positional(1, "principal (node:<id> or scheduler:<id>)");
        int colon = text.indexOf(':');
        String kind = colon < 0 ? "" : text.substring(0, colon);
        String id = colon < 0 ? "" : text.substring(colon + 1);
        try {
            return switch (kind) {
                case "node" -> KafkaAccess.Principal.node(id);
                case "scheduler" -> KafkaAccess.Principal.scheduler(id);
                default -> throw new Args.UsageException("a Kafka token is for node:<id> or scheduler:<id>, not '"
                        + text + "' (services keep SCRAM passwords)");
            };
        } catch (IllegalArgumentException e) {
            throw new Args.UsageException(e.getMessage());
        }
    }

    private Duration ttl() {
        Duration ttl = args.option("ttl").map(TokenCommand::ttl).orElse(DEFAULT_TTL);
        if (ttl.compareTo(BrokerSecurity.MAX_TOKEN_LIFETIME) > 0) {
            throw new Args.UsageException("--ttl is at most " + BrokerSecurity.MAX_TOKEN_LIFETIME.toDays() + "d");
        }
        return ttl;
    }

    private TopicCatalog catalog() {
        return new TopicCatalog(endpoints.topicPrefix());
    }

    private static void write(Path file, KafkaToken token) {
        try {
            if (file.getParent() != null) {
                Files.createDirectories(file.getParent());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + file.getParent(), e);
        }
        BrokerSecurity.writeOwnerOnly(file, token.toFileText());
    }

    interface UsersCall<T> {
        T call(KafkaUsers users);
    }

    /** Runs {@code call} as the broker's admin of this work dir's {@code up}, or as CSI_KAFKA_* if that is an admin. */
    <T> T withUsers(UsersCall<T> call) {
        try (Admin client = Kraft.admin(endpoints.kafkaBootstrap(), adminSecurity(work))) {
            return call.call(new KafkaUsers(client));
        }
    }

    /** The broker admin's settings: CSI_KAFKA_* if set (an admin), else the admin of {@code work}'s {@code up}. */
    static KafkaClientSecurity adminSecurity(Path work) {
        Path security = work.resolve(Cluster.KAFKA).resolve(KafkaMain.SECURITY_DIR);
        Path password = security.resolve(BrokerSecurity.ADMIN_PASSWORD);
        KafkaClientSecurity admin = KafkaClientSecurity.fromEnvironment();
        if (!admin.secured()) {
            if (!Files.isRegularFile(password)) {
                throw new Args.UsageException("no Kafka admin credential: " + password + " is missing (./csi up makes"
                        + " it; --work-dir D for another, or set CSI_KAFKA_USERNAME=" + KafkaAccess.ADMIN
                        + " with CSI_KAFKA_PASSWORD_FILE and CSI_KAFKA_TRUSTSTORE)");
            }
            admin = KafkaClientSecurity.scram(KafkaAccess.ADMIN, password, security.resolve(BrokerSecurity.CA_FILE));
        }
        return admin;
    }
}
