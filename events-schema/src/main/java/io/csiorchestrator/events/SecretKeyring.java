package io.csiorchestrator.events;

import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;

/**
 * The AES-256 keys that seal secrets, by key id. New secrets are sealed with the active key;
 * any key still in the ring opens what it sealed, so keys can be rotated: add the new key, make it
 * active, re-seal, then drop the old one.
 *
 * <p>Configured as {@code keyId:base64Key[,keyId:base64Key...]} and an active key id.
 */
public final class SecretKeyring {

    private final String activeKeyId;
    private final Map<String, SecretKey> keys;

    private SecretKeyring(String activeKeyId, Map<String, SecretKey> keys) {
        this.activeKeyId = activeKeyId;
        this.keys = Map.copyOf(keys);
    }

    /**
     * Parses {@code spec} ({@code id:base64[,id:base64...]}). Errors name the key id, never the key.
     */
    public static SecretKeyring parse(String spec, String activeKeyId) {
        if (spec == null || spec.isBlank()) {
            throw new IllegalArgumentException("secret keyring is empty: configure at least one keyId:base64Key (32 bytes)");
        }
        Map<String, SecretKey> keys = new LinkedHashMap<>();
        for (String entry : spec.split(",")) {
            String trimmed = entry.trim();
            int colon = trimmed.indexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("secret keyring entry #" + (keys.size() + 1) + " is not of the form keyId:base64Key");
            }
            String id = PathSafeId.require("secret key id", trimmed.substring(0, colon));
            byte[] raw;
            try {
                raw = Base64.getDecoder().decode(trimmed.substring(colon + 1));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("secret key '" + id + "' is not valid base64");
            }
            if (raw.length != 32) {
                throw new IllegalArgumentException("secret key '" + id + "' must be 32 bytes (AES-256), has " + raw.length);
            }
            if (keys.put(id, new SecretKeySpec(raw, "AES")) != null) {
                throw new IllegalArgumentException("secret key id '" + id + "' appears twice");
            }
        }
        String active = activeKeyId == null || activeKeyId.isBlank() ? keys.keySet().iterator().next() : activeKeyId;
        if (!keys.containsKey(active)) {
            throw new IllegalArgumentException("active secret key id '" + active + "' is not in the keyring " + keys.keySet());
        }
        return new SecretKeyring(active, keys);
    }

    public String activeKeyId() {
        return activeKeyId;
    }

    SecretKey activeKey() {
        return keys.get(activeKeyId);
    }

    SecretKey key(String keyId) {
        return keys.get(keyId);
    }

    public Set<String> keyIds() {
        return keys.keySet();
    }

    @Override
    public String toString() {
        return "SecretKeyring[active=" + activeKeyId + ", keys=" + keys.keySet() + "]";
    }
}
