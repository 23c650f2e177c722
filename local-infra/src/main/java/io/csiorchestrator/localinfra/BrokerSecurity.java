package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Properties;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;

/**
 * The secured set-up of the local/test KRaft node, and its key material in one directory:
 *
 * <ul>
 *   <li>client listener {@code SASL_SSL} with SCRAM-SHA-512 only: one user per principal
 *       ({@link KafkaAccess}), the broker's own user {@value KafkaAccess#BROKER} (inter-broker) and
 *       {@value KafkaAccess#ADMIN} made when the storage is formatted, every other one by the admin;</li>
 *   <li>controller listener {@code SSL} with client certificates required: only the holder of the broker's key
 *       (principal {@code CN=csi-kafka-broker} mapped to {@value KafkaAccess#BROKER}) gets in;</li>
 *   <li>KRaft's {@code StandardAuthorizer}, {@code allow.everyone.if.no.acl.found=false}, super users the broker
 *       and the admin only; no topic is created by a client's metadata request;</li>
 *   <li>{@code connections.max.reauth.ms}: an open connection re-authenticates at least that often, so a deleted
 *       (revoked) credential's connection is closed within that bound;</li>
 *   <li>delegation tokens ({@link KafkaUsers#issueToken}), the expiring credentials of nodes and schedulers: signed
 *       with the secret {@value #TOKEN_SECRET}, living up to {@link #MAX_TOKEN_LIFETIME}; the controller drops
 *       expired ones every {@code delegation.token.expiry.check.interval.ms} (default
 *       {@link #DEFAULT_TOKEN_EXPIRY_CHECK}), and an open connection authenticated with one ends at the token's
 *       expiry (Kafka limits the session to the credential's lifetime).</li>
 * </ul>
 *
 * <p>Files (every secret one 0600): {@value #CA_FILE} (the CA certificate clients trust; its key is never
 * written: nobody can issue another certificate under it), {@value #KEYSTORE} and {@value #KEYSTORE_PASSWORD}
 * (the broker's key and chain), {@value #BROKER_PASSWORD}, {@value #ADMIN_PASSWORD}. Made once by
 * {@link #createOrLoad}; a restart loads them, so the clients' truststore and credentials stay valid.
 */
public final class BrokerSecurity {

    /** The broker's cipher suites, most preferred first (see {@link #configure}): TLS 1.3, then TLS 1.2's ECDHE AEADs. */
    static final String CIPHER_SUITES = String.join(",",
        "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384");

    public static final String CA_FILE = "ca.pem";
    public static final String KEYSTORE = "broker.p12";
    public static final String KEYSTORE_PASSWORD = "broker.p12.password";
    public static final String BROKER_PASSWORD = "broker.password";
    public static final String ADMIN_PASSWORD = "admin.password";
    /** The key the broker signs delegation tokens with ({@code delegation.token.secret.key}). */
    public static final String TOKEN_SECRET = "token-secret.key";
    /** The longest a delegation token may live, renewals included; a token asks for its own, shorter lifetime. */
    public static final Duration MAX_TOKEN_LIFETIME = Duration.ofDays(365);
    /** How often the controller drops expired delegation tokens, so a new login with one is refused. */
    public static final Duration DEFAULT_TOKEN_EXPIRY_CHECK = Duration.ofSeconds(30);
    /** A revoked credential's open connection is closed within this bound (the next re-authentication). */
    public static final Duration DEFAULT_REAUTHENTICATION = Duration.ofSeconds(60);
    /** The broker certificate's names: the loopback addresses clients of this machine connect to. */
    public static final List<String> LOOPBACK_NAMES = List.of("localhost", "127.0.0.1");

    private static final Duration CA_VALIDITY = Duration.ofDays(3650);
    private static final Duration BROKER_VALIDITY = Duration.ofDays(825);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private final Duration reauthentication;
    private Duration tokenExpiryCheck = DEFAULT_TOKEN_EXPIRY_CHECK;

    private BrokerSecurity(Path dir, Duration reauthentication) {
        this.dir = dir;
        this.reauthentication = reauthentication;
    }

    /** How often expired delegation tokens are dropped (tests shorten it). */
    public BrokerSecurity tokenExpiryCheck(Duration interval) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("token expiry check interval must be positive, not " + interval);
        }
        this.tokenExpiryCheck = interval;
        return this;
    }

    /**
     * The material in {@code dir}: made (a new CA, a broker certificate for {@code names}, new passwords) if
     * {@value #CA_FILE} is missing, else loaded as it is.
     */
    public static BrokerSecurity createOrLoad(Path dir, List<String> names, Duration reauthentication) {
        BrokerSecurity security = new BrokerSecurity(dir, reauthentication);
        if (!Files.exists(dir.resolve(CA_FILE))) {
            security.create(names);
        }
        if (!Files.exists(dir.resolve(TOKEN_SECRET))) {
            // material made before delegation tokens: the token key is added, nothing else changes
            security.writeSecret(TOKEN_SECRET, newPassword() + newPassword());
        }
        return security;
    }

    private void create(List<String> names) {
        try {
            Files.createDirectories(dir);
            Certificates.Issued ca = Certificates.authority("csi-orchestrator kafka CA", CA_VALIDITY);
            Certificates.Issued broker = Certificates.issue(ca, KafkaAccess.BROKER, names, BROKER_VALIDITY);
            String storePassword = newPassword();
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry("broker", broker.key(), storePassword.toCharArray(), broker.chain().toArray(new Certificate[0]));
            writeSecret(KEYSTORE_PASSWORD, storePassword);
            try (OutputStream out = Files.newOutputStream(secretFile(KEYSTORE), StandardOpenOption.TRUNCATE_EXISTING)) {
                store.store(out, storePassword.toCharArray());
            }
            writeSecret(BROKER_PASSWORD, newPassword());
            writeSecret(ADMIN_PASSWORD, newPassword());
            writeSecret(TOKEN_SECRET, newPassword() + newPassword());
            // last: its presence means the rest is there
            Files.writeString(dir.resolve(CA_FILE), Certificates.pem(ca.certificate()), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write the Kafka key material to " + dir, e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("could not make the Kafka key material", e);
        }
    }

    /** A new random password: 32 characters of base64url (192 bits). */
    public static String newPassword() {
        byte[] bytes = new byte[24];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    /** Writes {@code text} to {@code file}, created 0600 before anything is written to it. */
    public static void writeOwnerOnly(Path file, String text) {
        try {
            Files.deleteIfExists(file);
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(file, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write " + file, e);
        }
    }

    private Path secretFile(String name) throws IOException {
        Path file = dir.resolve(name);
        Files.deleteIfExists(file);
        return Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    }

    private void writeSecret(String name, String value) {
        writeOwnerOnly(dir.resolve(name), value + "\n");
    }

    private String secret(String name) {
        try {
            return Files.readString(dir.resolve(name), StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new UncheckedIOException("could not read " + dir.resolve(name), e);
        }
    }

    public Path directory() {
        return dir;
    }

    /** The CA certificate (PEM) every client trusts: {@code csi.kafka.truststore}. */
    public Path truststore() {
        return dir.resolve(CA_FILE);
    }

    public Path adminPasswordFile() {
        return dir.resolve(ADMIN_PASSWORD);
    }

    /** The admin's client settings (a super user: topics, credentials, ACLs). */
    public KafkaClientSecurity admin() {
        return KafkaClientSecurity.scram(KafkaAccess.ADMIN, adminPasswordFile(), truststore());
    }

    /** {@code --add-scram} arguments of the storage format: the broker's and the admin's SCRAM credentials. */
    public List<String> formatArguments() {
        return List.of(
            "--add-scram", KafkaClientSecurity.MECHANISM + "=[name=" + KafkaAccess.BROKER + ",password=" + secret(BROKER_PASSWORD) + "]",
            "--add-scram", KafkaClientSecurity.MECHANISM + "=[name=" + KafkaAccess.ADMIN + ",password=" + secret(ADMIN_PASSWORD) + "]");
    }

    /**
     * Turns the PLAINTEXT settings of {@link Kraft#brokerProperties} into the secured ones: the client listener
     * {@code SASL_SSL} on {@code brokerPort}, the controller {@code SSL} (mutual) on {@code controllerPort}, and the
     * client-certificate listener {@value #CERT_LISTENER} on {@code certPort} ({@code ssl.client.auth=required},
     * trusting only the client CA of {@link ClientCertificates}; the certificate's {@code CN} is the principal, the
     * same names as SCRAM's and the tokens', so the ACLs are the same; {@link CertificatePrincipalBuilder} refuses a
     * revoked one). Extra listeners a caller adds must use {@code SASL_SSL} ({@link #LISTENER_PROTOCOL}).
     */
    public void configure(Properties p, String host, int brokerPort, int controllerPort, int certPort) {
        ClientCertificates clients = ClientCertificates.createOrLoad(dir);
        p.put("listeners", "SASL_SSL://" + host + ":" + brokerPort + ",CONTROLLER://" + host + ":" + controllerPort
            + "," + CERT_LISTENER + "://" + host + ":" + certPort);
        p.put("advertised.listeners", "SASL_SSL://" + host + ":" + brokerPort + "," + CERT_LISTENER + "://" + host + ":"
            + certPort);
        p.put("listener.security.protocol.map", "SASL_SSL:SASL_SSL,CONTROLLER:SSL," + CERT_LISTENER + ":SSL");
        String cert = "listener.name." + CERT_LISTENER.toLowerCase(java.util.Locale.ROOT) + ".";
        p.put(cert + "ssl.client.auth", "required");
        p.put(cert + "ssl.truststore.type", "PEM");
        p.put(cert + "ssl.truststore.location", clients.authority().toAbsolutePath().toString());
        p.put("principal.builder.class", CertificatePrincipalBuilder.class.getName());
        p.put(CertificatePrincipalBuilder.REVOKED_FILE, clients.revokedFile().toAbsolutePath().toString());
        p.put("inter.broker.listener.name", "SASL_SSL");
        p.put("sasl.enabled.mechanisms", KafkaClientSecurity.MECHANISM);
        p.put("sasl.mechanism.inter.broker.protocol", KafkaClientSecurity.MECHANISM);
        p.put("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
            KafkaClientSecurity.jaasConfig(KafkaAccess.BROKER, secret(BROKER_PASSWORD)));
        p.put("ssl.keystore.type", "PKCS12");
        p.put("ssl.keystore.location", dir.resolve(KEYSTORE).toAbsolutePath().toString());
        p.put("ssl.keystore.password", secret(KEYSTORE_PASSWORD));
        p.put("ssl.key.password", secret(KEYSTORE_PASSWORD));
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", truststore().toAbsolutePath().toString());
        p.put("listener.name.controller.ssl.client.auth", "required");
        // The cipher suites in the broker's order of preference (a JDK server picks by its own order): ChaCha20-Poly1305
        // first. Every JVM of this project runs the C1 JIT only (tests, ./csi up), and C1 cannot use the AES-GCM
        // intrinsics: on this machine AES-GCM encrypts 23 MB/s of 16 KB records under C1 (1,300 with C2), ChaCha20
        // 104. It was a quarter of the Java CPU of claim-service's tests (TLS records of the in-JVM broker and its
        // clients; JFR, issue 32). The same suites as the JDK's defaults, only reordered; clients offer all of them.
        p.put("ssl.cipher.suites", CIPHER_SUITES);
        p.put("ssl.principal.mapping.rules", "RULE:^CN=([^,]+)$/$1/,DEFAULT");
        p.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        p.put("allow.everyone.if.no.acl.found", "false");
        p.put("super.users", KafkaAccess.superUsers());
        p.put("connections.max.reauth.ms", String.valueOf(reauthentication.toMillis()));
        p.put("auto.create.topics.enable", "false");
        p.put("delegation.token.secret.key", secret(TOKEN_SECRET));
        // a token's own lifetime (KafkaUsers.issueToken) decides when it expires: it may be renewed up to it
        p.put("delegation.token.max.lifetime.ms", String.valueOf(MAX_TOKEN_LIFETIME.toMillis()));
        p.put("delegation.token.expiry.time.ms", String.valueOf(MAX_TOKEN_LIFETIME.toMillis()));
        p.put("delegation.token.expiry.check.interval.ms", String.valueOf(tokenExpiryCheck.toMillis()));
    }

    /**
     * Adds the extra {@code SASL_SSL} listener {@code name} (e.g. the one {@code ./csi chaos} advertises into a node's
     * network namespace) bound to {@code bind} and advertised at {@code advertised} ({@code host:port}), with its own
     * SCRAM login entry: Kafka looks a listener's JAAS entry up by its name
     * ({@code listener.name.<name>.scram-sha-512.sasl.jaas.config}), so without it the broker fails at start
     * ("Could not find a 'KafkaServer' ... entry in the JAAS configuration").
     */
    public void addListener(Properties p, String name, String bind, String advertised) {
        p.put("listeners", p.getProperty("listeners") + "," + name + "://" + bind);
        p.put("advertised.listeners", p.getProperty("advertised.listeners") + "," + name + "://" + advertised);
        p.put("listener.security.protocol.map", p.getProperty("listener.security.protocol.map") + "," + name + ":"
            + LISTENER_PROTOCOL);
        p.put("listener.name." + name.toLowerCase(java.util.Locale.ROOT) + "."
                + KafkaClientSecurity.MECHANISM.toLowerCase(java.util.Locale.ROOT) + ".sasl.jaas.config",
            KafkaClientSecurity.jaasConfig(KafkaAccess.BROKER, secret(BROKER_PASSWORD)));
    }

    /** The client-certificate listener's name (protocol {@code SSL}). */
    public static final String CERT_LISTENER = "SSL";

    /** The client certificates' CA, issued and revoked lists ({@link ClientCertificates}) in this directory. */
    public ClientCertificates clientCertificates() {
        return ClientCertificates.createOrLoad(dir);
    }

    /** The security protocol of every listener but the controller's and {@value #CERT_LISTENER}. */
    public static final String LISTENER_PROTOCOL = "SASL_SSL";
}
