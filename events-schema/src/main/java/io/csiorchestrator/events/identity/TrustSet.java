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
import java.security.PublicKey;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The trust file: the public keys consumers believe, by key id, each bound to one {@link Principal} and one use
 * ({@code sig}: record signatures; {@code enc}: X25519 keys secrets are sealed to, {@link SealingKeys}). A JSON Web Key Set of OKP keys with a {@code sub}
 * member naming the principal: {@code {"keys":[{"kty":"OKP","crv":"Ed25519","use":"sig","kid":"node-1.k1",
 * "sub":"node:node-1","x":"<base64url>"}, ...]}}. A principal may have several keys at once (a rotation in
 * progress: both kids verify until the old one is removed). A key id appears once.
 */
public final class TrustSet {

    private static final ObjectMapper JSON = new ObjectMapper();

    public enum Use {
        SIG("sig"), ENC("enc");

        private final String wire;

        Use(String wire) {
            this.wire = wire;
        }

        public String wire() {
            return wire;
        }

        static Use parse(String text) {
            for (Use u : values()) {
                if (u.wire.equals(text)) {
                    return u;
                }
            }
            throw new IllegalArgumentException("use '" + text + "' is not sig or enc");
        }
    }

    /** One trusted public key. */
    public record Entry(String kid, Principal principal, Use use, PublicKey key) {
    }

    private final Map<String, Entry> byKid;

    private TrustSet(Map<String, Entry> byKid) {
        // in the file's order (Map.copyOf would not keep it): the newest key of a principal is its last
        this.byKid = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(byKid));
    }

    public static TrustSet of(Collection<Entry> entries) {
        Map<String, Entry> map = new LinkedHashMap<>();
        for (Entry e : entries) {
            if (map.put(e.kid(), e) != null) {
                throw new IllegalArgumentException("key id '" + e.kid() + "' appears twice in the trust set");
            }
        }
        return new TrustSet(map);
    }

    public Optional<Entry> find(String kid) {
        return Optional.ofNullable(byKid.get(kid));
    }

    /**
     * The key to seal for {@code principal}: the newest (last listed) {@code enc} key the trust file publishes for it;
     * empty when it has none.
     */
    public Optional<Entry> sealingKey(Principal principal) {
        Entry found = null;
        for (Entry e : byKid.values()) {
            if (e.use() == Use.ENC && e.principal().equals(principal)) {
                found = e;
            }
        }
        return Optional.ofNullable(found);
    }

    public Collection<Entry> entries() {
        return byKid.values();
    }

    public TrustSet with(Entry entry) {
        List<Entry> all = new ArrayList<>(byKid.values());
        all.removeIf(e -> e.kid().equals(entry.kid()));
        all.add(entry);
        return of(all);
    }

    public TrustSet without(String kid) {
        List<Entry> all = new ArrayList<>(byKid.values());
        all.removeIf(e -> e.kid().equals(kid));
        return of(all);
    }

    public static TrustSet read(Path file) {
        try {
            return parse(Files.readString(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the trust file " + file + ": " + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("trust file " + file + ": " + e.getMessage(), e);
        }
    }

    /** Parses a trust file's text; the error names the entry (by position and kid) and what is wrong with it. */
    public static TrustSet parse(String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException("not JSON");
        }
        if (root == null || !root.path("keys").isArray()) {
            throw new IllegalArgumentException("has no \"keys\" array");
        }
        List<Entry> entries = new ArrayList<>();
        int i = 0;
        for (JsonNode k : root.path("keys")) {
            i++;
            String kid = k.path("kid").asText(null);
            try {
                PathSafeId.require("kid", kid);
                Use use = Use.parse(k.path("use").asText("sig"));
                String crv = k.path("crv").asText();
                if (!"OKP".equals(k.path("kty").asText()) || !(use == Use.SIG ? "Ed25519" : "X25519").equals(crv)) {
                    throw new IllegalArgumentException("a " + use.wire() + " key is kty OKP, crv "
                            + (use == Use.SIG ? "Ed25519" : "X25519"));
                }
                byte[] x = Base64.getUrlDecoder().decode(k.path("x").asText(""));
                PublicKey key = use == Use.SIG ? Ed25519.publicKey(x) : X25519Keys.publicKey(x);
                entries.add(new Entry(kid, Principal.parse(k.path("sub").asText(null)), use, key));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("key #" + i + (kid == null ? "" : " (kid " + kid + ")") + ": "
                        + e.getMessage());
            }
        }
        return of(entries);
    }

    public String toJson() {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode keys = root.putArray("keys");
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        for (Entry e : byKid.values()) {
            keys.addObject().put("kty", "OKP").put("crv", e.use() == Use.SIG ? "Ed25519" : "X25519")
                    .put("use", e.use().wire()).put("kid", e.kid()).put("sub", e.principal().toString())
                    .put("x", b64.encodeToString(e.use() == Use.SIG ? Ed25519.raw(e.key()) : X25519Keys.raw(e.key())));
        }
        return root.toPrettyString() + "\n";
    }

    /** Writes the set (public keys only, mode as the directory gives) to {@code file}, replacing it atomically. */
    public void write(Path file) {
        try {
            Path dir = file.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, ".trust", ".tmp");
            Files.writeString(tmp, toJson(), StandardCharsets.UTF_8);
            tmp.toFile().setReadable(true, false);
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the trust file " + file + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "TrustSet" + byKid.keySet();
    }
}
