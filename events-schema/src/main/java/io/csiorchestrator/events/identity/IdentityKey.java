package io.csiorchestrator.events.identity;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.csiorchestrator.events.PathSafeId;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.util.Base64;
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters;

/**
 * One principal's Ed25519 signing key: its {@link Principal}, its key id ({@code kid}, a {@link PathSafeId}) and the
 * key pair. Kept in a file of its own, mode 0600, as a JSON Web Key ({@code {"kty":"OKP","crv":"Ed25519","kid":..,
 * "sub":<principal>,"x":..,"d":..}}); its public half ({@link #publicEntry()}) goes into the consumers' trust file
 * ({@link TrustSet}). {@link #toString()} never shows the private key.
 */
public final class IdentityKey {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Principal principal;
    private final String kid;
    private final PrivateKey privateKey;
    private final PublicKey publicKey;
    private final Ed25519PrivateKeyParameters signer;

    private IdentityKey(Principal principal, String kid, PrivateKey privateKey, PublicKey publicKey) {
        this.principal = principal;
        this.kid = PathSafeId.require("key id", kid);
        this.privateKey = privateKey;
        this.publicKey = publicKey;
        this.signer = Ed25519.signer(privateKey);
        if (!java.util.Arrays.equals(signer.generatePublicKey().getEncoded(), Ed25519.raw(publicKey))) {
            throw new IllegalArgumentException("the public key (x) is not the private key's (d)");
        }
    }

    /** A new key for {@code principal} under {@code kid}. */
    public static IdentityKey generate(Principal principal, String kid) {
        try {
            KeyPair pair = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
            return new IdentityKey(principal, kid, pair.getPrivate(), pair.getPublic());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK has no Ed25519", e);
        }
    }

    public Principal principal() {
        return principal;
    }

    public String kid() {
        return kid;
    }

    /** The entry for the trust file: this key's public half, for signatures, bound to its principal. */
    public TrustSet.Entry publicEntry() {
        return new TrustSet.Entry(kid, principal, TrustSet.Use.SIG, publicKey);
    }

    /** An Ed25519 signature over {@code data}. */
    public byte[] sign(byte[] data) {
        return Ed25519.sign(signer, data);
    }

    /** Reads a key file written by {@link #write}; errors name the file and the field, never key material. */
    public static IdentityKey read(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the identity key file " + file + ": " + e.getMessage(), e);
        }
        try {
            JsonNode node = JSON.readTree(text);
            if (!"OKP".equals(node.path("kty").asText()) || !"Ed25519".equals(node.path("crv").asText())) {
                throw new IllegalArgumentException("not an Ed25519 key (kty OKP, crv Ed25519)");
            }
            Base64.Decoder b64 = Base64.getUrlDecoder();
            return new IdentityKey(Principal.parse(node.path("sub").asText(null)), node.path("kid").asText(null),
                    Ed25519.privateKey(b64.decode(node.path("d").asText(""))),
                    Ed25519.publicKey(b64.decode(node.path("x").asText(""))));
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("identity key file " + file + " is not valid: "
                    + (e instanceof IOException ? "not JSON" : e.getMessage()));
        }
    }

    /** Writes this key (private half included) to {@code file}, mode 0600 from the start, replacing it atomically. */
    public void write(Path file) {
        ObjectNode node = JSON.createObjectNode();
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        node.put("kty", "OKP").put("crv", "Ed25519").put("use", "sig").put("kid", kid).put("sub", principal.toString())
                .put("x", b64.encodeToString(Ed25519.raw(publicKey))).put("d", b64.encodeToString(Ed25519.raw(privateKey)));
        try {
            Path dir = file.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, ".key", ".tmp",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(tmp, node.toString() + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the identity key file " + file + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "IdentityKey[" + principal + ", kid=" + kid + "]";
    }
}
