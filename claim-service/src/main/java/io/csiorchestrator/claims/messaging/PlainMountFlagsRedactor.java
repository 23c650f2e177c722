package io.csiorchestrator.claims.messaging;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.io.JsonEOFException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Blanks plain mount flags in a {@code claim-requested} value before anything else sees it. Plain
 * flags break the contract (schedulers seal them into {@code sealedMountFlags}) and such a request
 * is dead-lettered; the dead-letter copy is made from the value this returns, so the flags do not
 * reach a second topic, nor a log line. This holds for a value of the wrong shape too:
 * <ul>
 *   <li>A JSON object: every field named like mount flags ({@code mountFlags}, in any case, with or
 *       without {@code _} / {@code -}), at any depth, is blanked: a list keeps its count, each entry
 *       becoming {@value #REDACTED} (so the rejection still says how many were given); any other
 *       value becomes {@value #REDACTED}. So does a {@code mountOptions} that is not an object (e.g. the
 *       options as a JSON string). The rest stays, for the reason and the operator.</li>
 *   <li>Anything else (text that is not JSON, a truncated record, trailing text after the object, a
 *       duplicate key, a bare string or list) cannot be split into flags and the rest: it is
 *       <em>withheld</em>, replaced by {@code {"withheld": why, "length": bytes, "sha256": hex}}. The
 *       reason gives where the text stops being JSON (line, column), never the text there; the length
 *       and hash (with the dead letter's topic/partition/offset headers) find the original on
 *       {@code claim-requested}.</li>
 * </ul>
 * A value with nothing to blank is returned as the same instance.
 */
public final class PlainMountFlagsRedactor {

    /** What each plain flag is replaced with. */
    public static final String REDACTED = "(redacted)";

    // Duplicate keys and trailing text fail the parse: a tree keeps only the last duplicate, and
    // ignores what follows the object, so blanking the tree would leave those parts unseen.
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    /**
     * The value to hand on, and, when the whole value was withheld, why (else null).
     */
    public record Redacted(String value, String withheld) {
    }

    private PlainMountFlagsRedactor() {
    }

    public static Redacted redact(String value) {
        if (value == null) {
            return new Redacted(null, null);
        }
        JsonNode root;
        try {
            root = JSON.readTree(value);
        } catch (JsonProcessingException e) {
            return withheld(value, "is not valid JSON" + where(e));
        }
        if (!(root instanceof ObjectNode object)) {
            return withheld(value, "is not a JSON object");
        }
        return new Redacted(blank(object) ? object.toString() : value, null);
    }

    /** Blanks every flag-like field under {@code node}; whether anything changed. */
    private static boolean blank(JsonNode node) {
        boolean changed = false;
        if (node instanceof ObjectNode object) {
            List<Map.Entry<String, JsonNode>> fields = new ArrayList<>(object.properties());
            for (Map.Entry<String, JsonNode> field : fields) {
                String name = normalized(field.getKey());
                JsonNode value = field.getValue();
                if (name.equals("mountflags")) {
                    changed |= blankFlags(object, field.getKey(), value);
                } else if (name.equals("mountoptions") && !value.isObject() && !value.isNull()) {
                    object.put(field.getKey(), REDACTED);
                    changed = true;
                } else {
                    changed |= blank(value);
                }
            }
        } else if (node instanceof ArrayNode array) {
            for (JsonNode element : array) {
                changed |= blank(element);
            }
        }
        return changed;
    }

    private static boolean blankFlags(ObjectNode parent, String field, JsonNode flags) {
        if (flags.isNull() || (flags.isArray() && flags.isEmpty())) {
            return false;
        }
        if (flags instanceof ArrayNode list) {
            ArrayNode blanked = parent.putArray(field);
            for (int i = 0; i < list.size(); i++) {
                blanked.add(REDACTED);
            }
        } else {
            parent.put(field, REDACTED);
        }
        return true;
    }

    private static String normalized(String name) {
        return name.replace("_", "").replace("-", "").toLowerCase(Locale.ROOT);
    }

    /** Where parsing stopped, without Jackson's message (it quotes the offending token). */
    private static String where(JsonProcessingException e) {
        JsonLocation at = e.getLocation();
        String what = e instanceof JsonEOFException ? "it ends early" : "it stops being JSON";
        return " (" + what + (at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr()) + ")";
    }

    private static Redacted withheld(String value, String problem) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        String why = "the claim-requested value " + problem + "; withheld, as it may carry plain mount flags";
        ObjectNode replacement = JSON.createObjectNode()
                .put("withheld", why)
                .put("length", bytes.length)
                .put("sha256", sha256(bytes));
        return new Redacted(replacement.toString(), why);
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
