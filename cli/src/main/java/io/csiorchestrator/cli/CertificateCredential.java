package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.Properties;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.BrokerSecurity;
import io.csiorchestrator.localinfra.Certificates;
import io.csiorchestrator.localinfra.ClientCertificates;
import io.csiorchestrator.localinfra.KafkaMain;
import io.csiorchestrator.localinfra.KafkaUsers;

/**
 * A principal's Kafka client certificate (issue 33 item 1), issued by the client CA of the broker {@code ./csi up}
 * runs ({@code <work>/kafka/security/}, {@link ClientCertificates}), as three files in one directory, each 0600:
 * {@value #KEY} (the private key, PKCS#8 PEM), {@value #CERTIFICATE} (the certificate, then the client CA) and
 * {@value #CA} (the broker's CA, which the client verifies the broker against).
 */
final class CertificateCredential {

    static final String KEY = "kafka-client.key";
    static final String CERTIFICATE = "kafka-client.pem";
    static final String CA = "ca.pem";
    /** In {@code endpoints.properties}: the client-certificate listener's {@code host:port}. */
    static final String BOOTSTRAP_KEY = "kafka.certificate.bootstrap.servers";

    /** The files of one certificate and what it is. */
    record Files(Path key, Path certificate, Path ca, String serial, Instant expires) {
    }

    private CertificateCredential() {
    }

    /** {@code <work>/kafka-credentials/<principal>/}. */
    static Path defaultDir(Path work, String principal) {
        return work.resolve(CliKafkaSecurity.CREDENTIALS_DIR).resolve(principal);
    }

    private static Path securityDir(Path work) {
        return work.resolve(Cluster.KAFKA).resolve(KafkaMain.SECURITY_DIR);
    }

    /** The client CA of {@code work}'s broker, if that broker made one (it does at its start). */
    static Optional<ClientCertificates> authority(Path work) {
        Path dir = securityDir(work);
        return java.nio.file.Files.isRegularFile(dir.resolve(ClientCertificates.CA_FILE))
                ? Optional.of(ClientCertificates.createOrLoad(dir)) : Optional.empty();
    }

    /**
     * Grants {@code principal} its ACLs and issues it a certificate living {@code ttl}, written into {@code dir}
     * (made if missing; files there of an earlier certificate are replaced).
     */
    static Files issue(Path work, KafkaUsers users, KafkaAccess.Principal principal, TopicCatalog catalog, Duration ttl,
                       Path dir) {
        ClientCertificates authority = authority(work).orElseThrow(() -> new Args.UsageException("no Kafka client CA: "
                + securityDir(work).resolve(ClientCertificates.CA_FILE) + " is missing (the broker of ./csi up makes it at"
                + " its start; --work-dir D for another. On Kubernetes, Strimzi issues certificates: a KafkaUser with"
                + " authentication type tls, deploy/README.md)"));
        try {
            java.nio.file.Files.createDirectories(dir);
            users.grant(principal, catalog);
            Certificates.Issued issued = authority.issue(principal.name(), ttl);
            ClientCertificates.write(issued, dir.resolve(KEY), dir.resolve(CERTIFICATE));
            BrokerSecurity.writeOwnerOnly(dir.resolve(CA), java.nio.file.Files.readString(
                    securityDir(work).resolve(BrokerSecurity.CA_FILE)));
            return new Files(dir.resolve(KEY).toAbsolutePath(), dir.resolve(CERTIFICATE).toAbsolutePath(),
                    dir.resolve(CA).toAbsolutePath(), issued.certificate().getSerialNumber().toString(16),
                    issued.certificate().getNotAfter().toInstant());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the certificate of " + principal.name() + " to " + dir, e);
        }
    }

    /** The client-certificate listener of {@code work}'s broker: from endpoints.properties, else Kafka's ready file. */
    static Optional<String> bootstrap(Path work) {
        for (Path file : new Path[] {work.resolve(Endpoints.FILE),
                work.resolve(Cluster.KAFKA).resolve(io.csiorchestrator.localinfra.StateDir.READY)}) {
            if (java.nio.file.Files.isRegularFile(file)) {
                Properties p = new Properties();
                try (Reader reader = java.nio.file.Files.newBufferedReader(file)) {
                    p.load(reader);
                } catch (IOException e) {
                    continue;
                }
                String value = p.getProperty(BOOTSTRAP_KEY, p.getProperty(KafkaMain.CERT_BOOTSTRAP));
                if (value != null && !value.isBlank()) {
                    return Optional.of(value.strip());
                }
            }
        }
        return Optional.empty();
    }
}
