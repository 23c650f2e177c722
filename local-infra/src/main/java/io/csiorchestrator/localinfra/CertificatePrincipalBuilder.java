package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import javax.net.ssl.SSLPeerUnverifiedException;

import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.security.auth.AuthenticationContext;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.KafkaPrincipalBuilder;
import org.apache.kafka.common.security.auth.KafkaPrincipalSerde;
import org.apache.kafka.common.security.auth.SslAuthenticationContext;
import org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

/**
 * The broker's principal builder ({@code principal.builder.class}): Kafka's own for every listener but the
 * client-certificate one ({@value BrokerSecurity#CERT_LISTENER}), where a connection's principal is its certificate
 * subject mapped by {@code ssl.principal.mapping.rules} (as Kafka's), unless the certificate's serial is in the
 * revoked list ({@value #REVOKED_FILE}, {@link ClientCertificates}): then it is {@value #REVOKED_NAME}, which no ACL
 * names. Kafka builds an SSL connection's principal anew for every request (the channel asks its authenticator each
 * time), so an open connection loses its rights as soon as the broker has read the list, and a new connection with
 * that certificate gets none, even after a new certificate for the same principal has brought its ACLs back.
 */
public final class CertificatePrincipalBuilder implements KafkaPrincipalBuilder, KafkaPrincipalSerde, Configurable {

    /** Broker setting: the revoked list's path. */
    public static final String REVOKED_FILE = "csi.revoked-certificates-file";
    /** The principal name of a revoked certificate's connections: no ACL names it. */
    public static final String REVOKED_NAME = "revoked-certificate";

    private DefaultKafkaPrincipalBuilder kafkas;
    private SslPrincipalMapper mapper;
    private RevokedList revoked;

    @Override
    public void configure(Map<String, ?> configs) {
        Object rules = configs.get("ssl.principal.mapping.rules");
        mapper = SslPrincipalMapper.fromRules(rules == null ? "DEFAULT" : String.valueOf(rules));
        kafkas = new DefaultKafkaPrincipalBuilder(null, mapper);
        Object file = configs.get(REVOKED_FILE);
        if (file == null || String.valueOf(file).isBlank()) {
            throw new IllegalArgumentException(REVOKED_FILE + " is not set: the client-certificate listener needs its"
                + " revoked list");
        }
        revoked = RevokedList.of(Path.of(String.valueOf(file)));
    }

    @Override
    public KafkaPrincipal build(AuthenticationContext context) {
        if (context instanceof SslAuthenticationContext ssl
                && BrokerSecurity.CERT_LISTENER.equals(ssl.listenerName().toUpperCase(Locale.ROOT))) {
            X509Certificate leaf;
            try {
                Certificate[] peer = ssl.session().getPeerCertificates();
                leaf = (X509Certificate) peer[0];
            } catch (SSLPeerUnverifiedException e) {
                return KafkaPrincipal.ANONYMOUS; // not reached: the listener requires a client certificate
            }
            try {
                String name = mapper.getName(leaf.getSubjectX500Principal().getName());
                return new KafkaPrincipal(KafkaPrincipal.USER_TYPE,
                    revoked.contains(leaf.getSerialNumber()) ? REVOKED_NAME : name);
            } catch (IOException e) {
                throw new IllegalArgumentException("could not map certificate subject "
                    + leaf.getSubjectX500Principal().getName(), e);
            }
        }
        return kafkas.build(context);
    }

    @Override
    public byte[] serialize(KafkaPrincipal principal) {
        return kafkas.serialize(principal);
    }

    @Override
    public KafkaPrincipal deserialize(byte[] bytes) {
        return kafkas.deserialize(bytes);
    }

    /**
     * The revoked serials of one file, read again when it changed. Asked at every request of a certificate's
     * connection, it looks at the file (one stat) at most once per {@link #CHECK_INTERVAL_NANOS} (5 s): a revocation
     * is seen within that, well inside the minute it must take, and the requests in between cost a time comparison,
     * not a system call.
     */
    static final class RevokedList {
        static final long CHECK_INTERVAL_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        private static final Map<Path, RevokedList> LISTS = new java.util.concurrent.ConcurrentHashMap<>();
        private static final System.Logger LOG = System.getLogger(CertificatePrincipalBuilder.class.getName());

        private final Path file;
        private volatile Set<BigInteger> serials = Set.of();
        /** Set when the file could not be read: every certificate is refused (fail closed) until it can. */
        private volatile boolean unreadable;
        private volatile long checkedAt;
        private FileTime modified;
        private long size = -1;

        private RevokedList(Path file) {
            this.file = file;
            reload();
        }

        /** One list per file for the whole JVM (a test may run several brokers, each with its own file). */
        static RevokedList of(Path file) {
            return LISTS.computeIfAbsent(file.toAbsolutePath(), RevokedList::new);
        }

        boolean contains(BigInteger serial) {
            if (System.nanoTime() - checkedAt > CHECK_INTERVAL_NANOS) {
                reload();
            }
            return unreadable || serials.contains(serial);
        }

        /** Reads the file again if it changed since the last look. */
        private synchronized void reload() {
            checkedAt = System.nanoTime();
            try {
                if (!Files.exists(file)) {
                    serials = Set.of();
                    unreadable = false;
                    return;
                }
                FileTime time = Files.getLastModifiedTime(file);
                long length = Files.size(file);
                if (time.equals(modified) && length == size && !unreadable) {
                    return;
                }
                serials = Set.copyOf(ClientCertificates.readRevoked(file));
                modified = time;
                size = length;
                unreadable = false;
            } catch (IOException | RuntimeException e) {
                if (!unreadable) {
                    LOG.log(System.Logger.Level.ERROR, "revoked certificate list " + file + " unreadable, refusing every"
                        + " client certificate until it can be read: " + e);
                }
                unreadable = true;
            }
        }
    }
}
