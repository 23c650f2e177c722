package io.csiorchestrator.events;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;

/**
 * The security settings of every Kafka client of this project (services' SmallRye channels and admin clients, the
 * worker's, the simulator's and the CLI's plain producers and consumers), made in one place from four settings:
 *
 * <table>
 *   <caption>settings (property; environment variable)</caption>
 *   <tr><td>{@value #PROTOCOL} ({@code CSI_KAFKA_SECURITY_PROTOCOL})</td><td>{@code SASL_SSL} or {@code PLAINTEXT};
 *       default {@code SASL_SSL} when a user name is set, else {@code PLAINTEXT}</td></tr>
 *   <tr><td>{@value #USERNAME} ({@code CSI_KAFKA_USERNAME})</td><td>the SCRAM-SHA-512 user: the principal</td></tr>
 *   <tr><td>{@value #PASSWORD_FILE} ({@code CSI_KAFKA_PASSWORD_FILE})</td><td>a file holding its password, readable
 *       by its owner only (a file others may read is refused)</td></tr>
 *   <tr><td>{@value #TRUSTSTORE} ({@code CSI_KAFKA_TRUSTSTORE})</td><td>a PEM file with the CA certificate(s) the
 *       broker's certificate must chain to (host name verified)</td></tr>
 *   <tr><td>{@value #TOKEN_FILE} ({@code CSI_KAFKA_TOKEN_FILE})</td><td>instead of a user and password: a file
 *       holding a Kafka delegation token ({@link KafkaToken}), readable by its owner only. The principal is the
 *       token's owner; the broker refuses the token once it expired or was revoked (nodes and schedulers)</td></tr>
 *   <tr><td>{@value #CERTIFICATE_FILE} ({@code CSI_KAFKA_CERTIFICATE_FILE}) and {@value #KEY_FILE}
 *       ({@code CSI_KAFKA_KEY_FILE})</td><td>instead: a TLS client certificate (PEM, the certificate then its CA) and
 *       its private key (PKCS#8 PEM, readable by its owner only), protocol {@code SSL}: the principal is the
 *       certificate's {@code CN}. The broker's client-certificate listener has its own address (bootstrap)</td></tr>
 * </table>
 *
 * <p>The password (or the token's HMAC) goes only into {@code sasl.jaas.config}, a value Kafka itself never logs
 * ({@code [hidden]}); {@link #toString()} names the user and the files, never the password.
 */
public final class KafkaClientSecurity {

    public static final String PROTOCOL = "csi.kafka.security-protocol";
    public static final String USERNAME = "csi.kafka.username";
    public static final String PASSWORD_FILE = "csi.kafka.password-file";
    public static final String TRUSTSTORE = "csi.kafka.truststore";
    public static final String TOKEN_FILE = "csi.kafka.token-file";
    public static final String CERTIFICATE_FILE = "csi.kafka.certificate-file";
    public static final String KEY_FILE = "csi.kafka.key-file";
    public static final String MECHANISM = "SCRAM-SHA-512";

    private static final Set<PosixFilePermission> OTHERS = Set.of(PosixFilePermission.GROUP_READ,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE);

    private final String protocol;
    private final String username;
    private final String password;
    private final Path truststore;
    /** Set for a delegation token's login: its id is the SCRAM user name, its HMAC the password. */
    private final KafkaToken token;
    /** Set for a client certificate's login (protocol SSL): the certificate chain and the key, PEM. */
    private final String certificateChain;
    private final String key;
    private final Path certificateFile;

    private KafkaClientSecurity(String protocol, String username, String password, Path truststore) {
        this(protocol, username, password, truststore, null);
    }

    private KafkaClientSecurity(String username, Path truststore, Path certificateFile, String certificateChain,
                                String key) {
        this.protocol = "SSL";
        this.username = username;
        this.password = null;
        this.truststore = truststore;
        this.token = null;
        this.certificateFile = certificateFile;
        this.certificateChain = certificateChain;
        this.key = key;
    }

    private KafkaClientSecurity(String protocol, String username, String password, Path truststore, KafkaToken token) {
        this.protocol = protocol;
        this.username = username;
        this.password = password;
        this.truststore = truststore;
        this.token = token;
        this.certificateFile = null;
        this.certificateChain = null;
        this.key = null;
    }

    /**
     * SSL with the client certificate in {@code certificateFile} (PEM: the certificate, then its CA) and its private
     * key in {@code keyFile} (PKCS#8 PEM, refused if others may read it), trusting the CA(s) in {@code truststore}.
     * The principal is the certificate's {@code CN}; it must be the leaf (first) certificate of the file.
     */
    public static KafkaClientSecurity certificate(Path certificateFile, Path keyFile, Path truststore) {
        requireFile(CERTIFICATE_FILE, certificateFile);
        String chain;
        try {
            chain = Files.readString(certificateFile, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + CERTIFICATE_FILE + " " + certificateFile, e);
        }
        String subject;
        try {
            var certs = java.security.cert.CertificateFactory.getInstance("X.509")
                .generateCertificates(new java.io.ByteArrayInputStream(chain.getBytes(StandardCharsets.US_ASCII)));
            if (certs.isEmpty()) {
                throw new IllegalArgumentException(CERTIFICATE_FILE + " " + certificateFile + " holds no certificate");
            }
            subject = ((java.security.cert.X509Certificate) certs.iterator().next()).getSubjectX500Principal().getName();
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalArgumentException(CERTIFICATE_FILE + " " + certificateFile + " is not a PEM certificate: "
                + e.getMessage(), e);
        }
        String key = readOwnerOnly(KEY_FILE, keyFile);
        if (!key.contains("-----BEGIN PRIVATE KEY-----")) {
            throw new IllegalArgumentException(KEY_FILE + " " + keyFile + " is not an unencrypted PKCS#8 PEM key"
                + " (BEGIN PRIVATE KEY)");
        }
        String name = subject.startsWith("CN=") && !subject.contains(",") ? subject.substring(3) : subject;
        return new KafkaClientSecurity(name, requireFile(TRUSTSTORE, truststore), certificateFile, chain, key);
    }

    /** No security: PLAINTEXT (only for a broker that has a PLAINTEXT listener, which ours no longer have). */
    public static KafkaClientSecurity plaintext() {
        return new KafkaClientSecurity("PLAINTEXT", null, null, null);
    }

    /**
     * SASL_SSL with the delegation token in {@code tokenFile} ({@link KafkaToken#read}; refused if others may read
     * it), trusting the CA(s) in {@code truststore}. The principal is the token's owner.
     */
    public static KafkaClientSecurity token(Path tokenFile, Path truststore) {
        return token(KafkaToken.read(tokenFile), truststore);
    }

    /** As {@link #token(Path, Path)} with the token itself (tests and credential tools). */
    public static KafkaClientSecurity token(KafkaToken token, Path truststore) {
        return new KafkaClientSecurity("SASL_SSL", token.owner(), null, requireFile(TRUSTSTORE, truststore), token);
    }

    /** SASL_SSL as {@code username} with the password in {@code passwordFile}, trusting the CA(s) in {@code truststore}. */
    public static KafkaClientSecurity scram(String username, Path passwordFile, Path truststore) {
        return new KafkaClientSecurity("SASL_SSL", requireUser(username), readPassword(passwordFile),
            requireFile(TRUSTSTORE, truststore));
    }

    /** As {@link #scram(String, Path, Path)} with the password itself (tests and credential tools). */
    public static KafkaClientSecurity scramWithPassword(String username, String password, Path truststore) {
        return new KafkaClientSecurity("SASL_SSL", requireUser(username), requirePassword(password),
            requireFile(TRUSTSTORE, truststore));
    }

    /** From the properties above, looked up by name in {@code config} (e.g. MicroProfile Config, which maps the env). */
    public static KafkaClientSecurity from(Function<String, Optional<String>> config) {
        Optional<String> user = config.apply(USERNAME).filter(s -> !s.isBlank());
        boolean hasToken = config.apply(TOKEN_FILE).filter(s -> !s.isBlank()).isPresent();
        Optional<Path> certificate = config.apply(CERTIFICATE_FILE).filter(s -> !s.isBlank()).map(Path::of);
        String protocol = config.apply(PROTOCOL).filter(s -> !s.isBlank()).map(s -> s.trim().toUpperCase(Locale.ROOT))
            .orElse(certificate.isPresent() ? "SSL" : user.isPresent() || hasToken ? "SASL_SSL" : "PLAINTEXT");
        if (certificate.isPresent() && !protocol.equals("SSL")) {
            throw new IllegalArgumentException(CERTIFICATE_FILE + " needs " + PROTOCOL + "=SSL, not " + protocol);
        }
        switch (protocol) {
            case "PLAINTEXT":
                return plaintext();
            case "SSL":
                if (user.isPresent() || hasToken) {
                    throw new IllegalArgumentException("set either " + CERTIFICATE_FILE + " or " + USERNAME + "/"
                        + TOKEN_FILE + ", not both");
                }
                return certificate(certificate.orElseThrow(() -> new IllegalArgumentException(
                        PROTOCOL + "=SSL needs " + CERTIFICATE_FILE)),
                    config.apply(KEY_FILE).filter(s -> !s.isBlank()).map(Path::of).orElseThrow(
                        () -> new IllegalArgumentException(CERTIFICATE_FILE + " needs " + KEY_FILE)),
                    config.apply(TRUSTSTORE).filter(s -> !s.isBlank()).map(Path::of).orElseThrow(
                        () -> new IllegalArgumentException(CERTIFICATE_FILE + " needs " + TRUSTSTORE)));
            case "SASL_SSL":
                Optional<Path> tokenFile = config.apply(TOKEN_FILE).filter(s -> !s.isBlank()).map(Path::of);
                if (tokenFile.isPresent()) {
                    if (user.isPresent()) {
                        throw new IllegalArgumentException("set either " + TOKEN_FILE + " or " + USERNAME + ", not both");
                    }
                    return token(tokenFile.get(), config.apply(TRUSTSTORE).filter(s -> !s.isBlank()).map(Path::of)
                        .orElseThrow(() -> new IllegalArgumentException(TOKEN_FILE + " needs " + TRUSTSTORE)));
                }
                String name = user.orElseThrow(() -> new IllegalArgumentException(
                    PROTOCOL + "=SASL_SSL needs " + USERNAME));
                Path passwordFile = config.apply(PASSWORD_FILE).filter(s -> !s.isBlank()).map(Path::of)
                    .orElseThrow(() -> new IllegalArgumentException(USERNAME + " needs " + PASSWORD_FILE));
                Path trust = config.apply(TRUSTSTORE).filter(s -> !s.isBlank()).map(Path::of)
                    .orElseThrow(() -> new IllegalArgumentException(USERNAME + " needs " + TRUSTSTORE));
                return scram(name, passwordFile, trust);
            default:
                throw new IllegalArgumentException("unsupported " + PROTOCOL + " " + Violation.quote(protocol)
                    + ": use SASL_SSL, SSL or PLAINTEXT");
        }
    }

    /** From the environment variables named above (and system properties of the same names as the properties). */
    public static KafkaClientSecurity fromEnvironment() {
        return from(name -> Optional.ofNullable(System.getProperty(name)).or(() -> Optional.ofNullable(System.getenv(envName(name)))));
    }

    /** {@code csi.kafka.password-file} becomes {@code CSI_KAFKA_PASSWORD_FILE}. */
    public static String envName(String property) {
        return property.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
    }

    public boolean secured() {
        return !"PLAINTEXT".equals(protocol);
    }

    /** The principal's name, if any (a token's owner for a token login). */
    public Optional<String> username() {
        return Optional.ofNullable(username);
    }

    /** The delegation token this login uses, if it is a token login. */
    public Optional<KafkaToken> token() {
        return Optional.ofNullable(token);
    }

    /** Whether this login is a client certificate's (protocol SSL, the broker's client-certificate listener). */
    public boolean certificateLogin() {
        return key != null;
    }

    /** The client settings (empty except {@code security.protocol} for PLAINTEXT), to add to a client's config. */
    public Map<String, Object> clientProperties() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("security.protocol", protocol);
        if (key != null) {
            // inline PEM: the key is a password-type setting, which Kafka logs as [hidden]
            p.put("ssl.keystore.type", "PEM");
            p.put("ssl.keystore.certificate.chain", certificateChain);
            p.put("ssl.keystore.key", key);
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", truststore.toAbsolutePath().toString());
            p.put("ssl.engine.factory.class", SharedSslEngineFactory.class.getName());
        } else if (secured()) {
            p.put("sasl.mechanism", MECHANISM);
            p.put("sasl.jaas.config", token != null ? tokenJaasConfig(token) : jaasConfig(username, password));
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", truststore.toAbsolutePath().toString());
            p.put("ssl.engine.factory.class", SharedSslEngineFactory.class.getName());
        }
        return p;
    }

    /** Adds {@link #clientProperties()} to {@code config} and returns it. */
    public <M extends Map<? super String, Object>> M applyTo(M config) {
        config.putAll(clientProperties());
        return config;
    }

    /** Adds {@link #clientProperties()} to {@code props} and returns it. */
    public Properties applyTo(Properties props) {
        props.putAll(clientProperties());
        return props;
    }

    /** The JAAS line of a SCRAM login; user name and password quoted. */
    public static String jaasConfig(String username, String password) {
        return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + quoted(username)
            + "\" password=\"" + quoted(password) + "\";";
    }

    /** The JAAS line of a delegation token's SCRAM login: the token id as user, its HMAC as password. */
    static String tokenJaasConfig(KafkaToken token) {
        return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + quoted(token.tokenId())
            + "\" password=\"" + quoted(token.hmac()) + "\" tokenauth=\"true\";";
    }

    private static String quoted(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    private static String requireUser(String username) {
        if (username == null || !username.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,127}")) {
            throw new IllegalArgumentException("invalid Kafka user name " + Violation.quote(String.valueOf(username)));
        }
        return username;
    }

    private static String requirePassword(String password) {
        if (password == null || password.isEmpty() || password.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw new IllegalArgumentException("a Kafka password must be non-empty printable text");
        }
        return password;
    }

    private static Path requireFile(String what, Path file) {
        if (file == null || !Files.isRegularFile(file)) {
            throw new IllegalArgumentException(what + " " + file + " is not a file");
        }
        return file;
    }

    /** The password in {@code file} (one line; a final line break is dropped); refused if others may read it. */
    static String readPassword(Path file) {
        return requirePassword(readOwnerOnly(PASSWORD_FILE, file).strip());
    }

    /** The text of the secret file {@code file} (setting {@code what}); refused if others may read or write it. */
    static String readOwnerOnly(String what, Path file) {
        requireFile(what, file);
        try {
            if (Files.getFileStore(file).supportsFileAttributeView("posix")) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
                if (perms.stream().anyMatch(OTHERS::contains)) {
                    throw new IllegalArgumentException(what + " " + file
                        + " may be read or written by others than its owner: chmod 600 it");
                }
            }
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + what + " " + file, e);
        }
    }

    @Override
    public String toString() {
        if (key != null) {
            return "KafkaClientSecurity[SSL client certificate " + certificateFile + " of " + username + ", truststore "
                + truststore + "]";
        }
        return secured()
            ? "KafkaClientSecurity[SASL_SSL " + MECHANISM + (token != null ? " token " + token.tokenId() + " of " : " user ")
                + username + ", truststore " + truststore + "]"
            : "KafkaClientSecurity[PLAINTEXT]";
    }
}
