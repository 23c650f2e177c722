package io.csiorchestrator.claims.messaging;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;

/**
 * Blanks plain mount flags in a {@code claim-requested} value before anything else sees it. Plain
 * flags break the contract (schedulers seal them into {@code sealedMountFlags}) and such a request
 * is dead-lettered; the dead-letter copy is made from the value this returns, so the flags do not
 * reach a second topic, nor a log line. Each flag becomes {@value #REDACTED} (the count stays, so
 * the rejection still says how many were given). A value without plain flags, or one that is not a
 * JSON object, is returned unchanged (the handler dead-letters what does not parse).
 */
public final class PlainMountFlagsRedactor {

    /** What each plain flag is replaced with. */
    public static final String REDACTED = "(redacted)";

    private static final ObjectMapper JSON = new ObjectMapper();

    private PlainMountFlagsRedactor() {
    }

    public static String redact(String value) {
        if (value == null || !value.contains("mountFlags")) {
            return value;
        }
        JsonNode root;
        try {
            root = JSON.readTree(value);
        } catch (IOException e) {
            return value;
        }
        if (root == null || !(root.get("mountOptions") instanceof ObjectNode options)
                || !(options.get("mountFlags") instanceof ArrayNode flags) || flags.isEmpty()) {
            return value;
        }
        ArrayNode blanked = options.putArray("mountFlags");
        for (int i = 0; i < flags.size(); i++) {
            blanked.add(REDACTED);
        }
        return root.toString();
    }
}
