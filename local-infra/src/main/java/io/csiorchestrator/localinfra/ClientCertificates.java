package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The client certificates of the broker's {@code SSL} listener (issue 33 item 1): their own CA, what was issued to
 * whom, and what was revoked. All in the broker's security directory:
 *
 * <ul>
 *   <li>{@value #CA_FILE} and {@value #CA_KEY} (0600): the client CA, made on first use. It is not the CA of
 *       {@link BrokerSecurity#CA_FILE} (whose key is never written), and the broker trusts it on the {@code SSL}
 *       listener only, so a certificate issued here never gets onto the controller listener;</li>
 *   <li>{@value #ISSUED}: one line per certificate issued, {@code <serial hex> <principal> <not after>};</li>
 *   <li>{@value #REVOKED}: one serial (hex) a line; the broker's {@link CertificatePrincipalBuilder} reads it and
 *       gives a revoked certificate's connections, open or new, a principal with no rights. Written whole and
 *       moved into place, so the broker never reads half a file.</li>
 * </ul>
 *
 * <p>Kafka checks no CRL: this list and the principal's ACLs are the revocation. A certificate's expiry is its own
 * (Kafka refuses an expired one at the TLS handshake; an open connection is not re-checked, see README "Security").
 */
public final class ClientCertificates {

    public static final String CA_FILE = "client-ca.pem";
    public static final String CA_KEY = "client-ca.key";
    public static final String ISSUED = "issued-certificates";
    public static final String REVOKED = "revoked-certificates";
    /** The longest a client certificate may live (as a delegation token: {@link BrokerSecurity#MAX_TOKEN_LIFETIME}). */
    public static final Duration MAX_LIFETIME = Duration.ofDays(365);
    private static final Duration CA_VALIDITY = Duration.ofDays(3650);

    private final Path dir;
    private final Certificates.Issued ca;

    private ClientCertificates(Path dir, Certificates.Issued ca) {
        this.dir = dir;
        this.ca = ca;
    }

    /** The client CA of the security directory {@code dir}: made (key 0600) if {@value #CA_FILE} is missing. */
    public static synchronized ClientCertificates createOrLoad(Path dir) {
        try {
            Files.createDirectories(dir);
            Path caFile = dir.resolve(CA_FILE);
            if (!Files.exists(caFile)) {
                Certificates.Issued made = Certificates.authority("csi-orchestrator kafka client CA", CA_VALIDITY);
                BrokerSecurity.writeOwnerOnly(dir.resolve(CA_KEY), Certificates.pem(made.key()));
                // last: its presence means the key is there
                Path tmp = dir.resolve(CA_FILE + ".tmp");
                Files.writeString(tmp, Certificates.pem(made.certificate()), StandardCharsets.US_ASCII);
                Files.move(tmp, caFile, StandardCopyOption.ATOMIC_MOVE);
                return new ClientCertificates(dir, made);
            }
            X509Certificate cert = Certificates.readCertificates(Files.readString(caFile)).get(0);
            return new ClientCertificates(dir, new Certificates.Issued(
                Certificates.readKey(Files.readString(dir.resolve(CA_KEY))), List.of(cert)));
        } catch (IOException e) {
            throw new UncheckedIOException("could not make or read the Kafka client CA in " + dir, e);
        }
    }

    /** The client CA's certificate (PEM): what the broker's {@code SSL} listener trusts. */
    public Path authority() {
        return dir.resolve(CA_FILE);
    }

    /** The revoked list the broker reads ({@value #REVOKED}). */
    public Path revokedFile() {
        return dir.resolve(REVOKED);
    }

    /**
     * A new key and certificate with the subject {@code CN=<principal>}, living {@code lifetime}; recorded in
     * {@value #ISSUED} so {@link #revoke} finds it. The chain is the certificate, then the client CA.
     */
    public synchronized Certificates.Issued issue(String principal, Duration lifetime) {
        if (lifetime.isNegative() || lifetime.isZero() || lifetime.compareTo(MAX_LIFETIME) > 0) {
            throw new IllegalArgumentException("a Kafka client certificate's lifetime must be more than 0 and at most "
                + MAX_LIFETIME.toDays() + " days, not " + lifetime);
        }
        Certificates.Issued issued = Certificates.issueClient(ca, principal, lifetime);
        X509Certificate cert = issued.certificate();
        String line = cert.getSerialNumber().toString(16) + " " + principal + " " + cert.getNotAfter().toInstant() + "\n";
        try {
            Files.writeString(dir.resolve(ISSUED), line, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("could not record the certificate issued to " + principal, e);
        }
        return issued;
    }

    /**
     * Revokes every certificate issued to {@code principal} that has not expired: their serials go into
     * {@value #REVOKED}. Returns how many were added (0 if all were revoked already).
     */
    public synchronized int revoke(String principal) {
        Set<BigInteger> revoked = readRevoked(revokedFile());
        List<BigInteger> added = new ArrayList<>();
        Instant now = Instant.now();
        for (String line : lines(dir.resolve(ISSUED))) {
            String[] parts = line.split(" ");
            if (parts.length == 3 && parts[1].equals(principal) && Instant.parse(parts[2]).isAfter(now)) {
                BigInteger serial = new BigInteger(parts[0], 16);
                if (revoked.add(serial)) {
                    added.add(serial);
                }
            }
        }
        if (!added.isEmpty()) {
            StringBuilder text = new StringBuilder("# revoked Kafka client certificates: one serial (hex) a line\n");
            revoked.forEach(s -> text.append(s.toString(16)).append('\n'));
            try {
                Path tmp = dir.resolve(REVOKED + ".tmp");
                Files.writeString(tmp, text, StandardCharsets.US_ASCII);
                Files.move(tmp, revokedFile(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                throw new UncheckedIOException("could not write " + revokedFile(), e);
            }
        }
        return added.size();
    }

    /** The serials in the revoked list {@code file} (empty if it does not exist); a line not a hex serial is refused. */
    public static Set<BigInteger> readRevoked(Path file) {
        Set<BigInteger> serials = new LinkedHashSet<>();
        for (String line : lines(file)) {
            if (!line.matches("[0-9a-fA-F]{1,64}")) {
                throw new IllegalArgumentException(file + ": not a serial (hex): '" + line + "'");
            }
            serials.add(new BigInteger(line, 16));
        }
        return serials;
    }

    private static List<String> lines(Path file) {
        try {
            if (!Files.exists(file)) {
                return List.of();
            }
            return Files.readAllLines(file, StandardCharsets.UTF_8).stream().map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException("could not read " + file, e);
        }
    }

    /**
     * Writes a client's files: {@code key} (the private key, PKCS#8 PEM, 0600) and {@code certificate} (the
     * certificate then the client CA, PEM). The broker CA its client trusts is {@link BrokerSecurity#CA_FILE}.
     */
    public static void write(Certificates.Issued issued, Path key, Path certificate) {
        BrokerSecurity.writeOwnerOnly(key, Certificates.pem(issued.key()));
        StringBuilder chain = new StringBuilder();
        issued.chain().forEach(c -> chain.append(Certificates.pem(c)));
        BrokerSecurity.writeOwnerOnly(certificate, chain.toString());
    }
}
