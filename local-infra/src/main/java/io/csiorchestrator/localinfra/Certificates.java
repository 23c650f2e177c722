package io.csiorchestrator.localinfra;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.List;

/**
 * X.509 certificates made at run time in pure Java (no keytool process, no BouncyCastle): a self-signed CA and
 * certificates it issues, EC P-256 keys signed with SHA256withECDSA. Just enough DER for what TLS needs here:
 * subject and issuer common names, validity, basic constraints, key usage of the CA, and subject alternative names
 * (DNS names and IP addresses, which clients verify the host against).
 */
public final class Certificates {

    /** A private key and its certificate chain (leaf first). */
    public record Issued(PrivateKey key, List<X509Certificate> chain) {
        public Issued {
            chain = List.copyOf(chain);
        }

        public X509Certificate certificate() {
            return chain.get(0);
        }
    }

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final DateTimeFormatter UTC_TIME = DateTimeFormatter.ofPattern("yyMMddHHmmss'Z'").withZone(ZoneOffset.UTC);
    /** Validity starts an hour early, so a clock a little behind still accepts a fresh certificate. */
    private static final Duration BACKDATE = Duration.ofHours(1);

    private static final int[] EC_PUBLIC_KEY_WITH_SHA256 = {1, 2, 840, 10045, 4, 3, 2};
    private static final int[] COMMON_NAME = {2, 5, 4, 3};
    private static final int[] BASIC_CONSTRAINTS = {2, 5, 29, 19};
    private static final int[] KEY_USAGE = {2, 5, 29, 15};
    private static final int[] SUBJECT_ALT_NAME = {2, 5, 29, 17};

    private Certificates() {
    }

    /** A new self-signed CA named {@code commonName}, valid for {@code validity}. */
    public static Issued authority(String commonName, Duration validity) {
        KeyPair pair = keyPair();
        byte[] extensions = seq(
            extension(BASIC_CONSTRAINTS, true, seq(bool(true))),
            // keyCertSign (bit 5) and cRLSign (bit 6): one byte 0000 0110, one unused bit
            extension(KEY_USAGE, true, new byte[] {0x03, 0x02, 0x01, 0x06}));
        X509Certificate cert = sign(commonName, name(commonName), pair, pair.getPrivate(), validity, extensions);
        return new Issued(pair.getPrivate(), List.of(cert));
    }

    /**
     * A new certificate for {@code commonName}, issued by {@code ca}, for servers and clients alike; {@code names}
     * become its subject alternative names (IP literals as IP addresses, the rest as DNS names).
     */
    public static Issued issue(Issued ca, String commonName, List<String> names, Duration validity) {
        KeyPair pair = keyPair();
        byte[][] general = new byte[names.size()][];
        for (int i = 0; i < names.size(); i++) {
            general[i] = generalName(names.get(i));
        }
        byte[] extensions = seq(
            extension(BASIC_CONSTRAINTS, true, seq()),
            extension(SUBJECT_ALT_NAME, false, seq(general)));
        X509Certificate cert = sign(commonName, ca.certificate().getSubjectX500Principal().getEncoded(), pair, ca.key(),
            validity, extensions);
        return new Issued(pair.getPrivate(), List.of(cert, ca.certificate()));
    }

    /**
     * A new client certificate for {@code commonName} (the subject {@code CN=<commonName>}, no alternative names),
     * issued by {@code ca}: what a client presents on the broker's client-certificate listener.
     */
    public static Issued issueClient(Issued ca, String commonName, Duration validity) {
        KeyPair pair = keyPair();
        byte[] extensions = seq(extension(BASIC_CONSTRAINTS, true, seq()));
        X509Certificate cert = sign(commonName, ca.certificate().getSubjectX500Principal().getEncoded(), pair, ca.key(),
            validity, extensions);
        return new Issued(pair.getPrivate(), List.of(cert, ca.certificate()));
    }

    /** {@code key} as unencrypted PKCS#8 PEM ({@code BEGIN PRIVATE KEY}), as OpenSSL, librdkafka and Kafka read it. */
    public static String pem(PrivateKey key) {
        return "-----BEGIN PRIVATE KEY-----\n"
            + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(key.getEncoded())
            + "\n-----END PRIVATE KEY-----\n";
    }

    /** The EC private key in the PKCS#8 PEM text {@code pem} ({@link #pem(PrivateKey)}). */
    public static PrivateKey readKey(String pem) {
        String body = pem.replace("-----BEGIN PRIVATE KEY-----", "").replace("-----END PRIVATE KEY-----", "")
            .replaceAll("\\s", "");
        try {
            return java.security.KeyFactory.getInstance("EC").generatePrivate(
                new java.security.spec.PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException("not an EC private key in PKCS#8 PEM", e);
        }
    }

    /** The certificates in the PEM text {@code pem}, in file order. */
    public static List<X509Certificate> readCertificates(String pem) {
        try {
            return CertificateFactory.getInstance("X.509")
                .generateCertificates(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII))).stream()
                .map(X509Certificate.class::cast).toList();
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not PEM certificates", e);
        }
    }

    /** {@code certificate} in PEM. */
    public static String pem(X509Certificate certificate) {
        try {
            return "-----BEGIN CERTIFICATE-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(certificate.getEncoded())
                + "\n-----END CERTIFICATE-----\n";
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static KeyPair keyPair() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("no EC P-256 in this JDK", e);
        }
    }

    private static X509Certificate sign(String subject, byte[] issuer, KeyPair subjectKeys, PrivateKey issuerKey,
                                        Duration validity, byte[] extensions) {
        Instant now = Instant.now();
        byte[] algorithm = seq(oid(EC_PUBLIC_KEY_WITH_SHA256));
        byte[] tbs = seq(
            tagged(0xa0, integer(BigInteger.TWO)), // v3
            integer(new BigInteger(63, RANDOM).add(BigInteger.ONE)),
            algorithm,
            issuer,
            seq(time(now.minus(BACKDATE)), time(now.plus(validity))),
            name(subject),
            subjectKeys.getPublic().getEncoded(),
            tagged(0xa3, extensions));
        try {
            Signature signer = Signature.getInstance("SHA256withECDSA");
            signer.initSign(issuerKey, RANDOM);
            signer.update(tbs);
            byte[] der = seq(tbs, algorithm, bitString(signer.sign()));
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(new ByteArrayInputStream(der));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("could not sign a certificate for " + subject, e);
        }
    }

    private static byte[] name(String commonName) {
        if (!commonName.matches("[A-Za-z0-9._ -]{1,64}")) {
            throw new IllegalArgumentException("unsupported common name " + commonName);
        }
        return seq(set(seq(oid(COMMON_NAME), tlv(0x0c, commonName.getBytes(StandardCharsets.UTF_8)))));
    }

    private static byte[] generalName(String name) {
        if (name.matches("[0-9.]+") || name.contains(":")) {
            try {
                return tlv(0x87, InetAddress.getByName(name).getAddress()); // [7] iPAddress
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("bad IP address " + name, e);
            }
        }
        if (!name.matches("[A-Za-z0-9.-]{1,253}")) {
            throw new IllegalArgumentException("bad DNS name " + name);
        }
        return tlv(0x82, name.getBytes(StandardCharsets.US_ASCII)); // [2] dNSName
    }

    private static byte[] extension(int[] id, boolean critical, byte[] value) {
        return critical ? seq(oid(id), bool(true), tlv(0x04, value)) : seq(oid(id), tlv(0x04, value));
    }

    private static byte[] time(Instant instant) {
        return tlv(0x17, UTC_TIME.format(instant).getBytes(StandardCharsets.US_ASCII));
    }

    private static byte[] integer(BigInteger value) {
        return tlv(0x02, value.toByteArray());
    }

    private static byte[] bool(boolean value) {
        return new byte[] {0x01, 0x01, (byte) (value ? 0xff : 0)};
    }

    private static byte[] bitString(byte[] bits) {
        byte[] content = new byte[bits.length + 1];
        System.arraycopy(bits, 0, content, 1, bits.length);
        return tlv(0x03, content);
    }

    private static byte[] oid(int[] arcs) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(40 * arcs[0] + arcs[1]);
        for (int i = 2; i < arcs.length; i++) {
            int arc = arcs[i];
            int shift = 28;
            while (shift > 0 && (arc >>> shift) == 0) {
                shift -= 7;
            }
            for (; shift > 0; shift -= 7) {
                out.write(0x80 | ((arc >>> shift) & 0x7f));
            }
            out.write(arc & 0x7f);
        }
        return tlv(0x06, out.toByteArray());
    }

    private static byte[] seq(byte[]... parts) {
        return tlv(0x30, concat(parts));
    }

    private static byte[] set(byte[]... parts) {
        return tlv(0x31, concat(parts));
    }

    private static byte[] tagged(int tag, byte[] content) {
        return tlv(tag, content);
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }

    private static byte[] tlv(int tag, byte[] content) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(tag);
        int length = content.length;
        if (length < 0x80) {
            out.write(length);
        } else if (length < 0x100) {
            out.write(0x81);
            out.write(length);
        } else {
            out.write(0x82);
            out.write(length >> 8);
            out.write(length & 0xff);
        }
        out.writeBytes(content);
        return out.toByteArray();
    }
}
