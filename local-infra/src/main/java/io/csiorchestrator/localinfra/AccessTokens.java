package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.interfaces.RSAPrivateCrtKey;
import java.security.interfaces.RSAPublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.RSAPublicKeySpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * The services' REST bearer tokens, made with the JDK alone: RS256 JWTs with issuer {@value #ISSUER}, the
 * roles in {@code groups}, the namespaces a token may touch in {@code namespaces} ({@code ["*"]} for every
 * one), a {@code jti} to revoke it by, and the {@code kid} of the signing key. The services verify them with
 * SmallRye JWT against a JSON Web Key Set file ({@link #jwks}) that may hold several public keys at once, so a
 * key rolls without downtime. Used by {@code ./csi up} / {@code ./csi token issue} and by the tests' token helper.
 */
public final class AccessTokens {

    public static final String ISSUER = "csi-orchestrator";
    /** The roles, after Nomad's CSI capabilities (README "Security"). */
    public static final Set<String> ROLES = Set.of("volume-read", "volume-write", "volume-mount", "volume-detach",
            "plugin-read", "admin");
    public static final String ALL_NAMESPACES = "*";

    /** A signing key: the private key and the key id its public half has in the key set. */
    public record SigningKey(String kid, PrivateKey privateKey, RSAPublicKey publicKey) {
    }

    /** What a token says. */
    public record Claims(String subject, Set<String> roles, List<String> namespaces, Instant issuedAt, Duration ttl,
                         String jti) {
        public static Claims of(String subject, Set<String> roles, List<String> namespaces, Duration ttl) {
            return new Claims(subject, roles, namespaces, Instant.now(), ttl, UUID.randomUUID().toString());
        }
    }

    private AccessTokens() {
    }

    public static SigningKey generate() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
            generator.initialize(2048);
            KeyPair pair = generator.generateKeyPair();
            RSAPublicKey pub = (RSAPublicKey) pair.getPublic();
            return new SigningKey(kid(pub), pair.getPrivate(), pub);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The key id: the first 16 characters of the base64url SHA-256 of the public key's encoding. */
    public static String kid(RSAPublicKey key) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getEncoded());
            return b64(digest).substring(0, 16);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A signed token (compact JWS). */
    public static String issue(SigningKey key, Claims claims) {
        for (String role : claims.roles()) {
            if (!ROLES.contains(role)) {
                throw new IllegalArgumentException("unknown role '" + role + "' (roles: " + String.join(", ",
                        ROLES.stream().sorted().toList()) + ")");
            }
        }
        long iat = claims.issuedAt().getEpochSecond();
        String header = "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"" + key.kid() + "\"}";
        String payload = "{\"iss\":\"" + ISSUER + "\",\"sub\":" + str(claims.subject())
                + ",\"upn\":" + str(claims.subject())
                + ",\"groups\":" + array(claims.roles().stream().sorted().toList())
                + ",\"namespaces\":" + array(claims.namespaces())
                + ",\"iat\":" + iat + ",\"exp\":" + (iat + claims.ttl().toSeconds())
                + ",\"jti\":" + str(claims.jti()) + "}";
        String signingInput = b64(header.getBytes(StandardCharsets.UTF_8)) + "." + b64(payload.getBytes(StandardCharsets.UTF_8));
        try {
            Signature signature = Signature.getInstance("SHA256withRSA");
            signature.initSign(key.privateKey());
            signature.update(signingInput.getBytes(StandardCharsets.US_ASCII));
            return signingInput + "." + b64(signature.sign());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The JSON Web Key Set of these public keys (what the services' {@code mp.jwt.verify.publickey.location} names). */
    public static String jwks(List<RSAPublicKey> keys) {
        return "{\"keys\":[" + keys.stream().map(k -> "{\"kty\":\"RSA\",\"use\":\"sig\",\"alg\":\"RS256\",\"kid\":\""
                + kid(k) + "\",\"n\":\"" + b64(unsigned(k.getModulus())) + "\",\"e\":\""
                + b64(unsigned(k.getPublicExponent())) + "\"}").collect(Collectors.joining(",")) + "]}\n";
    }

    /** The private key as PKCS#8 PEM. */
    public static String privatePem(SigningKey key) {
        return "-----BEGIN PRIVATE KEY-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(key.privateKey().getEncoded()) + "\n-----END PRIVATE KEY-----\n";
    }

    /** A signing key from its PKCS#8 PEM (the public half and kid derived from it). */
    public static SigningKey readPrivatePem(String pem) {
        String body = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        try {
            KeyFactory factory = KeyFactory.getInstance("RSA");
            RSAPrivateCrtKey priv = (RSAPrivateCrtKey) factory.generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
            RSAPublicKey pub = (RSAPublicKey) factory.generatePublic(new RSAPublicKeySpec(priv.getModulus(), priv.getPublicExponent()));
            return new SigningKey(kid(pub), priv, pub);
        } catch (GeneralSecurityException | IllegalArgumentException | ClassCastException e) {
            throw new IllegalArgumentException("not an RSA private key in PKCS#8 PEM", e);
        }
    }

    /**
     * The key set {@code ./csi up} keeps in {@code dir}: {@code signing.pem} (0600, the key tokens are signed
     * with), {@code jwks.json} (every accepted public key: the signing key's, plus any in
     * {@code previous-*.pem} kept while a key rolls). Made once; kept from one {@code up} to the next.
     */
    public static SigningKey ensureKeySet(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        Path signing = dir.resolve("signing.pem");
        if (!Files.exists(signing)) {
            writePrivate(signing, privatePem(generate()));
        }
        SigningKey key = readPrivatePem(Files.readString(signing));
        writeJwks(dir, key);
        return key;
    }

    /**
     * Rolls the key: the current signing key becomes {@code previous-<kid>.pem} (still accepted), a new one signs
     * from now on; {@code retire} drops every previous key from the set instead.
     */
    public static SigningKey roll(Path dir, boolean retire) throws IOException {
        SigningKey current = ensureKeySet(dir);
        if (retire) {
            try (var files = Files.list(dir)) {
                for (Path p : files.filter(AccessTokens::isPrevious).toList()) {
                    Files.delete(p);
                }
            }
        } else {
            writePrivate(dir.resolve("previous-" + current.kid() + ".pem"), privatePem(current));
            writePrivate(dir.resolve("signing.pem"), privatePem(generate()));
        }
        return ensureKeySet(dir);
    }

    private static void writeJwks(Path dir, SigningKey key) throws IOException {
        List<RSAPublicKey> keys = new ArrayList<>();
        keys.add(key.publicKey());
        try (var files = Files.list(dir)) {
            for (Path p : files.filter(AccessTokens::isPrevious).sorted().toList()) {
                keys.add(readPrivatePem(Files.readString(p)).publicKey());
            }
        }
        Files.writeString(dir.resolve("jwks.json"), jwks(keys));
    }

    private static boolean isPrevious(Path p) {
        String name = p.getFileName().toString();
        return name.startsWith("previous-") && name.endsWith(".pem");
    }

    /** Writes a file only its owner reads (0600 from the start, never briefly wider). */
    public static void writePrivate(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.deleteIfExists(tmp);
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(tmp, text);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private static byte[] unsigned(BigInteger value) {
        byte[] bytes = value.toByteArray();
        if (bytes.length > 1 && bytes[0] == 0) {
            byte[] trimmed = new byte[bytes.length - 1];
            System.arraycopy(bytes, 1, trimmed, 0, trimmed.length);
            return trimmed;
        }
        return bytes;
    }

    private static String b64(byte[] bytes) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private static String array(List<String> values) {
        return values.stream().map(AccessTokens::str).collect(Collectors.joining(",", "[", "]"));
    }

    /** A JSON string; ids here are plain, but quotes, backslashes and control characters are escaped anyway. */
    private static String str(String value) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
