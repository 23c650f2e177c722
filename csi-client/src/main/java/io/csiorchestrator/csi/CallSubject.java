package io.csiorchestrator.csi;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.MessageOrBuilder;

/**
 * What a CSI call is about, for operator messages: the volume, node, name and paths a request
 * names. None of these fields is a secret in csi.proto. Empty strings where the request has none.
 */
public record CallSubject(String volumeId, String nodeId, String name, String stagingTargetPath, String targetPath) {

    public static final CallSubject NONE = new CallSubject("", "", "", "", "");

    public CallSubject {
        volumeId = nullToEmpty(volumeId);
        nodeId = nullToEmpty(nodeId);
        name = nullToEmpty(name);
        stagingTargetPath = nullToEmpty(stagingTargetPath);
        targetPath = nullToEmpty(targetPath);
    }

    /** Reads the subject from the top-level fields of any CSI request. */
    public static CallSubject of(MessageOrBuilder request) {
        return new CallSubject(
                stringField(request, "volume_id").isEmpty() ? stringField(request, "source_volume_id")
                        : stringField(request, "volume_id"),
                stringField(request, "node_id"),
                stringField(request, "name"),
                stringField(request, "staging_target_path"),
                stringField(request, "target_path"));
    }

    /** "volume v1", or "volume named n" for a volume that has no id yet, or "the volume". */
    public String volumeLabel() {
        if (!volumeId.isEmpty()) {
            return "volume " + volumeId;
        }
        if (!name.isEmpty()) {
            return "volume named " + name;
        }
        return "the volume";
    }

    /** "node n1", or "the node" when the request names none. */
    public String nodeLabel() {
        return nodeId.isEmpty() ? "the node" : "node " + nodeId;
    }

    private static String stringField(MessageOrBuilder message, String fieldName) {
        FieldDescriptor field = message.getDescriptorForType().findFieldByName(fieldName);
        if (field == null || field.isRepeated() || field.getJavaType() != FieldDescriptor.JavaType.STRING) {
            return "";
        }
        if (field.getOptions().getExtension(io.csiorchestrator.csi.v1.CsiProto.csiSecret)) {
            return "";
        }
        return (String) message.getField(field);
    }

    private static String nullToEmpty(String value) {
        return value == null ? "" : value;
    }
}
