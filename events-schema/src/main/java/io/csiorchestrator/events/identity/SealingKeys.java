package io.csiorchestrator.events.identity;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
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
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

/**
 * One principal's X25519 sealing keys (issue 20 item 4): the private halves of the {@code enc} keys the trust file
 * publishes for it, by key id, oldest first. Secrets are sealed to the newest key the trust file lists for the
 * recipient; every key still held here opens what was sealed to it, so a rotation adds a key (here first, then in the
 * trust file) and retiring drops the old ones. Kept in a file of its own, mode 0600, next to the principal's signing
 * key: {@code {"sub":"node:node-1","keys":[{"kty":"OKP","crv":"X25519","use":"enc","kid":..,"x":..,"d":..}]}}.
 * {@link #toString()} never shows key material.
 */
public final class SealingKeys {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** One key pair under its key id. */
    public record Key(String kid, PrivateKey privateKey, PublicKey publicKey) {
        public Key {
            PathSafeId.require("key id", kid);
        }

        @Override
        public String toString() {
            return "SealingKeys.Key[" + kid + "]";
        }
    }

    private final Principal principal;
    private final List<Key> keys;

    private SealingKeys(Principal principal, List<Key> keys) {
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("sealing keys of " + principal + ": none");
        }
        this.principal = principal;
        this.keys = List.copyOf(keys);
    }

    /** One new key for {@code principal} under {@code kid}. */
    public static SealingKeys generate(Principal principal, String kid) {
        return new SealingKeys(principal, List.of(newKey(kid)));
    }

    /** These keys and a new one under {@code kid}, which becomes the newest. */
    public SealingKeys withNewKey(String kid) {
        if (find(kid).isPresent()) {
            throw new IllegalArgumentException("key id '" + kid + "' already held");
        }
        List<Key> all = new ArrayList<>(keys);
        all.add(newKey(kid));
        return new SealingKeys(principal, all);
    }

    /** Only the newest key (after a retirement). */
    public SealingKeys newestOnly() {
        return new SealingKeys(principal, List.of(newest()));
    }

    private static Key newKey(String kid) {
        try {
            KeyPair pair = KeyPairGenerator.getInstance("X25519").generateKeyPair();
            return new Key(kid, pair.getPrivate(), pair.getPublic());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK has no X25519", e);
        }
    }

    public Principal principal() {
        return principal;
    }

    public List<Key> keys() {
        return keys;
    }

    public Key newest() {
        return keys.get(keys.size() - 1);
    }

    public Optional<Key> find(String kid) {
        return keys.stream().filter(k -> k.kid().equals(kid)).findFirst();
    }

    public List<String> kids() {
        return keys.stream().map(Key::kid).toList();
    }

    /** The trust file's entry for {@code key}: its public half, for sealing, bound to this principal. */
    public TrustSet.Entry publicEntry(Key key) {
        return new TrustSet.Entry(key.kid(), principal, TrustSet.Use.ENC, key.publicKey());
    }

    /** Reads a file written by {@link #write}; errors name the file and the field, never key material. */
    public static SealingKeys read(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the sealing key file " + file + ": " + e.getMessage(), e);
        }
        try {
            JsonNode root = JSON.readTree(text);
            if (root == null || !root.path("keys").isArray()) {
                throw new IllegalArgumentException("has no \"keys\" array");
            }
            Principal principal = Principal.parse(root.path("sub").asText(null));
            List<Key> keys = new ArrayList<>();
            Base64.Decoder b64 = Base64.getUrlDecoder();
            for (JsonNode k : root.path("keys")) {
                if (!"OKP".equals(k.path("kty").asText()) || !"X25519".equals(k.path("crv").asText())) {
                    throw new IllegalArgumentException("key #" + (keys.size() + 1) + " is not an X25519 key (kty OKP, crv X25519)");
                }
                keys.add(new Key(k.path("kid").asText(null), X25519Keys.privateKey(b64.decode(k.path("d").asText(""))),
                        X25519Keys.publicKey(b64.decode(k.path("x").asText("")))));
            }
            return new SealingKeys(principal, keys);
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalArgumentException("sealing key file " + file + " is not valid: "
                    + (e instanceof IOException ? "not JSON" : e.getMessage()));
        }
    }

    /** Writes these keys (private halves included) to {@code file}, mode 0600 from the start, replacing it atomically. */
    public void write(Path file) {
        ObjectNode root = JSON.createObjectNode();
        root.put("sub", principal.toString());
        ArrayNode array = root.putArray("keys");
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        for (Key k : keys) {
            array.addObject().put("kty", "OKP").put("crv", "X25519").put("use", "enc").put("kid", k.kid())
                    .put("x", b64.encodeToString(X25519Keys.raw(k.publicKey())))
                    .put("d", b64.encodeToString(X25519Keys.raw(k.privateKey())));
        }
        try {
            Path dir = file.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, ".seal", ".tmp",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(tmp, root.toString() + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the sealing key file " + file + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "SealingKeys[" + principal + ", kids=" + kids() + "]";
    }
}
