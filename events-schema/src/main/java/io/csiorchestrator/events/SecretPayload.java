package io.csiorchestrator.events;

import java.util.List;
import java.util.Map;

/** What {@link SealedSecrets} holds once opened: the volume's secrets and its mount flags. */
public record SecretPayload(Map<String, String> secrets, List<String> mountFlags) {

    public static final SecretPayload EMPTY = new SecretPayload(Map.of(), List.of());

    public SecretPayload {
        secrets = Copies.map(secrets);
        mountFlags = Copies.list(mountFlags);
    }

    @com.fasterxml.jackson.annotation.JsonIgnore
    public boolean isEmpty() {
        return secrets.isEmpty() && mountFlags.isEmpty();
    }

    @Override
    public String toString() {
        return "SecretPayload[secrets=" + secrets.keySet() + " (values redacted), mountFlags=[redacted x" + mountFlags.size() + "]]";
    }
}
