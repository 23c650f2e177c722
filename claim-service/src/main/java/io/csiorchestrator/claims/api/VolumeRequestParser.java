package io.csiorchestrator.claims.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.claims.domain.Failover;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.MountOptions;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.Violation;
import io.csiorchestrator.events.Violations;
import io.csiorchestrator.events.WireValue;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a POST /v1/volumes body (one volume object, an array of them, or {"volumes": [...]}) and
 * collects every problem of every volume at once, as {field, value, message}. Secret values and
 * mount flags are never echoed: their value is shown as {@value Violation#REDACTED}.
 */
public final class VolumeRequestParser {

    static final Set<String> FIELDS = Set.of("id", "namespace", "name", "externalId", "pluginId", "accessMode",
            "attachmentMode", "mountOptions", "parameters", "context", "secrets", "topology", "failover");

    /** One valid volume definition. */
    public record VolumeSpec(String namespace, String id, String name, String externalId, String pluginId,
                             AccessMode accessMode, AttachmentMode attachmentMode, String fsType, List<String> mountFlags,
                             Map<String, String> parameters, Map<String, String> context, Map<String, String> secrets,
                             Map<String, String> topology, Failover failover) {
        @Override
        public String toString() {
            return "VolumeSpec[" + namespace + "/" + id + ", secrets=" + secrets.keySet() + " (redacted), mountFlags=[redacted x"
                    + mountFlags.size() + "]]";
        }
    }

    /** The volumes, or the problems. */
    public record Parsed(List<VolumeSpec> volumes, List<Violation> problems) {
    }

    private VolumeRequestParser() {
    }

    public static Parsed parse(JsonNode body) {
        Violations v = new Violations();
        List<VolumeSpec> specs = new ArrayList<>();
        if (body == null || body.isNull() || body.isMissingNode()) {
            v.add("(body)", null, "a volume object or a list of volumes is required");
            return new Parsed(List.of(), v.list());
        }
        JsonNode list = body;
        String prefix = "volumes";
        if (body.isObject() && body.has("volumes")) {
            list = body.get("volumes");
        } else if (body.isObject()) {
            specs.add(volume(body, "", v));
            return result(specs, v);
        }
        if (!list.isArray()) {
            v.add(prefix, kind(list), "must be a list of volume objects");
            return new Parsed(List.of(), v.list());
        }
        if (list.isEmpty()) {
            v.add(prefix, "[]", "must hold at least one volume");
        }
        if (list.size() > 100) {
            v.add(prefix, list.size() + " volumes", "must hold at most 100 volumes per request");
            return new Parsed(List.of(), v.list());
        }
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < list.size(); i++) {
            String at = prefix + "[" + i + "].";
            JsonNode node = list.get(i);
            if (!node.isObject()) {
                v.add(prefix + "[" + i + "]", kind(node), "must be a volume object");
                continue;
            }
            VolumeSpec spec = volume(node, at, v);
            if (spec != null && !seen.add(spec.namespace() + "/" + spec.id())) {
                v.add(at + "id", spec.id(), "appears twice in this request (namespace " + spec.namespace() + ")");
            }
            specs.add(spec);
        }
        return result(specs, v);
    }

    private static Parsed result(List<VolumeSpec> specs, Violations v) {
        return v.isEmpty() ? new Parsed(List.copyOf(specs), List.of()) : new Parsed(List.of(), v.list());
    }

    private static VolumeSpec volume(JsonNode node, String at, Violations v) {
        int before = v.list().size();
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!FIELDS.contains(name)) {
                v.add(at + name, null, "is not a field of a volume (fields: " + String.join(", ", FIELDS.stream().sorted().toList()) + ")");
            }
        }
        String id = id(node, "id", at, v, true);
        String namespace = id(node, "namespace", at, v, false);
        if (namespace == null && !node.has("namespace")) {
            namespace = "default";
        }
        String name = text(node, "name", at, v, 256, false);
        String externalId = text(node, "externalId", at, v, 1024, true);
        String pluginId = id(node, "pluginId", at, v, true);
        AccessMode accessMode = wire(AccessMode.class, node, "accessMode", at, v);
        AttachmentMode attachmentMode = wire(AttachmentMode.class, node, "attachmentMode", at, v);
        String fsType = null;
        List<String> flags = List.of();
        JsonNode mount = node.get("mountOptions");
        if (mount != null && !mount.isNull()) {
            if (!mount.isObject()) {
                v.add(at + "mountOptions", kind(mount), "must be an object {fsType, mountFlags}");
            } else {
                for (Iterator<String> names = mount.fieldNames(); names.hasNext(); ) {
                    String f = names.next();
                    if (!f.equals("fsType") && !f.equals("mountFlags")) {
                        v.add(at + "mountOptions." + f, null, "is not a field of mountOptions (fields: fsType, mountFlags)");
                    }
                }
                fsType = text(mount, "fsType", at + "mountOptions.", v, 32, false);
                if (fsType != null) {
                    if (!fsType.matches("[a-z0-9][a-z0-9._-]{0,31}")) {
                        v.add(at + "mountOptions.fsType", fsType, "must be 1-32 characters of a-z, 0-9, '.', '_' or '-'");
                    }
                }
                JsonNode f = mount.get("mountFlags");
                if (f != null && !f.isNull()) {
                    if (!f.isArray()) {
                        v.addRedacted(at + "mountOptions.mountFlags", "must be a list of strings");
                    } else {
                        List<String> read = new ArrayList<>();
                        for (int i = 0; i < f.size(); i++) {
                            if (!f.get(i).isTextual()) {
                                v.addRedacted(at + "mountOptions.mountFlags[" + i + "]", "must be a string");
                            } else {
                                read.add(f.get(i).asText());
                            }
                        }
                        MountOptions.checkFlags(at + "mountOptions.mountFlags", read, v);
                        flags = read;
                    }
                }
                if (attachmentMode == AttachmentMode.BLOCK_DEVICE && (fsType != null || (f != null && !f.isNull() && !f.isEmpty()))) {
                    v.addRedacted(at + "mountOptions", "must be empty: a block-device volume takes no mount options");
                }
            }
        }
        Map<String, String> parameters = map(node, "parameters", at, v, false);
        Map<String, String> context = map(node, "context", at, v, false);
        Map<String, String> secrets = map(node, "secrets", at, v, true);
        Map<String, String> topology = map(node, "topology", at, v, false);
        Failover failover = null;
        String failoverText = text(node, "failover", at, v, 16, false);
        if (failoverText != null) {
            try {
                failover = Failover.fromWire(failoverText);
            } catch (IllegalArgumentException e) {
                v.add(at + "failover", failoverText, "must be fence (the default: another node may write once this one's"
                        + " lease lapsed and it fenced) or manual (only after its unmount or an operator's forced detach)");
            }
        }
        if (v.list().size() > before) {
            return null;
        }
        return new VolumeSpec(namespace, id, name == null ? id : name, externalId, pluginId, accessMode, attachmentMode,
                fsType, flags, parameters, context, secrets, topology, failover);
    }

    private static String id(JsonNode node, String field, String at, Violations v, boolean required) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            if (required) {
                v.add(at + field, null, "is required");
            }
            return null;
        }
        if (!value.isTextual()) {
            v.add(at + field, kind(value), "must be a string");
            return null;
        }
        String text = value.asText();
        var problem = PathSafeId.problem(text);
        if (problem.isPresent()) {
            v.add(at + field, text, problem.get());
            return null;
        }
        return text;
    }

    private static String text(JsonNode node, String field, String at, Violations v, int max, boolean required) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            if (required) {
                v.add(at + field, null, "is required");
            }
            return null;
        }
        if (!value.isTextual()) {
            v.add(at + field, kind(value), "must be a string");
            return null;
        }
        int before = v.list().size();
        v.text(at + field, value.asText(), max);
        return v.list().size() > before ? null : value.asText();
    }

    private static <E extends Enum<E> & WireValue> E wire(Class<E> type, JsonNode node, String field, String at, Violations v) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            v.add(at + field, null, "is required");
            return null;
        }
        try {
            return WireValue.parse(type, value.isTextual() ? value.asText() : value.toString());
        } catch (IllegalArgumentException e) {
            v.add(at + field, value.isTextual() ? value.asText() : value.toString(), e.getMessage().replaceFirst("^'.*?' ", ""));
            return null;
        }
    }

    /** {@code node.field} as a map of strings; problems to {@code v}, a secret's values never in them. */
    static Map<String, String> map(JsonNode node, String field, String at, Violations v, boolean secret) {
        JsonNode value = node.get(field);
        Map<String, String> out = new LinkedHashMap<>();
        if (value == null || value.isNull()) {
            return out;
        }
        if (!value.isObject()) {
            if (secret) {
                v.addRedacted(at + field, "must be an object of string values");
            } else {
                v.add(at + field, kind(value), "must be an object of string values");
            }
            return out;
        }
        if (value.size() > 256) {
            v.add(at + field, value.size() + " entries", "must have at most 256 entries");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = value.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = e.getKey();
            String where = at + field + "." + key;
            if (key.isBlank() || key.length() > 256) {
                v.add(at + field, key, "keys must be 1-256 characters");
                continue;
            }
            JsonNode val = e.getValue();
            if (!val.isTextual()) {
                if (secret) {
                    v.addRedacted(where, "must be a string");
                } else {
                    v.add(where, kind(val), "must be a string");
                }
                continue;
            }
            if (val.asText().length() > 4096) {
                if (secret) {
                    v.addRedacted(where, "must be at most 4096 characters");
                } else {
                    v.add(where, val.asText(), "must be at most 4096 characters");
                }
                continue;
            }
            out.put(key, val.asText());
        }
        return out;
    }

    private static String kind(JsonNode node) {
        if (node.isObject()) {
            return "an object";
        }
        if (node.isArray()) {
            return "a list";
        }
        return node.toString();
    }
}
