package io.csiorchestrator.csi;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.MapEntry;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.TextFormat;
import com.google.protobuf.UnknownFieldSet;
import io.csiorchestrator.csi.v1.CsiProto;
import io.csiorchestrator.csi.v1.VolumeCapability;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Makes any protobuf message safe to log. It walks the message through its descriptors and
 * blanks every field that csi.proto marks with the {@code csi_secret} option (for maps: every
 * value, keys kept) and every mount flag ({@code VolumeCapability.MountVolume.mount_flags}),
 * at any depth, and drops unknown fields, which could be secrets of a newer spec.
 */
public final class CsiRedactor {

    public static final String REDACTED = "***";

    /** Secret values shorter than this are not scrubbed from free text: they would blank noise. */
    private static final int MIN_SCRUBBED_LENGTH = 3;

    private static final FieldDescriptor MOUNT_FLAGS = VolumeCapability.MountVolume.getDescriptor()
            .findFieldByNumber(VolumeCapability.MountVolume.MOUNT_FLAGS_FIELD_NUMBER);

    private static final TextFormat.Printer SINGLE_LINE = TextFormat.printer().emittingSingleLine(true);

    private CsiRedactor() {
    }

    /** The message as one line of text, secrets and mount flags blanked. */
    public static String toSafeString(MessageOrBuilder message) {
        if (message == null) {
            return "null";
        }
        return message.getDescriptorForType().getName() + " {" + SINGLE_LINE.printToString(redact(message)).trim() + "}";
    }

    /** A copy of the message with secrets and mount flags blanked. */
    public static Message redact(MessageOrBuilder message) {
        Message.Builder copy = (message instanceof Message built ? built.toBuilder()
                : ((Message.Builder) message).clone());
        redactInPlace(copy);
        return copy.build();
    }

    /** Whether a field holds sensitive data: marked {@code csi_secret}, or the mount flags. */
    public static boolean isSensitive(FieldDescriptor field) {
        return field.equals(MOUNT_FLAGS)
                || field.getOptions().getExtension(CsiProto.csiSecret);
    }

    /**
     * Removes from free text (a plugin's status message, say) every secret value and mount flag
     * that the given message carries, so a plugin echoing its input cannot leak them.
     */
    public static String scrub(String text, MessageOrBuilder source) {
        if (text == null || text.isEmpty() || source == null) {
            return text;
        }
        Set<String> sensitive = new LinkedHashSet<>();
        collectSensitive(source, sensitive);
        List<String> longestFirst = new ArrayList<>(sensitive);
        longestFirst.sort(Comparator.comparingInt(String::length).reversed());
        String scrubbed = text;
        for (String value : longestFirst) {
            if (value.length() >= MIN_SCRUBBED_LENGTH) {
                scrubbed = scrubbed.replace(value, REDACTED);
            }
        }
        return scrubbed;
    }

    private static void redactInPlace(Message.Builder builder) {
        builder.setUnknownFields(UnknownFieldSet.getDefaultInstance());
        for (Map.Entry<FieldDescriptor, Object> entry : builder.getAllFields().entrySet()) {
            FieldDescriptor field = entry.getKey();
            if (isSensitive(field)) {
                blank(builder, field);
            } else if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                if (field.isRepeated()) {
                    int count = builder.getRepeatedFieldCount(field);
                    for (int i = 0; i < count; i++) {
                        Message.Builder element = ((Message) builder.getRepeatedField(field, i)).toBuilder();
                        redactInPlace(element);
                        builder.setRepeatedField(field, i, element.build());
                    }
                } else {
                    Message.Builder nested = ((Message) builder.getField(field)).toBuilder();
                    redactInPlace(nested);
                    builder.setField(field, nested.build());
                }
            }
        }
    }

    private static void blank(Message.Builder builder, FieldDescriptor field) {
        if (field.isMapField()) {
            int count = builder.getRepeatedFieldCount(field);
            for (int i = 0; i < count; i++) {
                Message.Builder entry = ((Message) builder.getRepeatedField(field, i)).toBuilder();
                blankSingle(entry, entry.getDescriptorForType().findFieldByName("value"));
                builder.setRepeatedField(field, i, entry.build());
            }
        } else if (field.isRepeated()) {
            int count = builder.getRepeatedFieldCount(field);
            for (int i = 0; i < count; i++) {
                Object blank = field.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                        ? builder.newBuilderForField(field).getDefaultInstanceForType()
                        : blankScalar(field);
                builder.setRepeatedField(field, i, blank);
            }
        } else {
            blankSingle(builder, field);
        }
    }

    private static void blankSingle(Message.Builder builder, FieldDescriptor field) {
        if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
            builder.clearField(field);
        } else {
            builder.setField(field, blankScalar(field));
        }
    }

    private static Object blankScalar(FieldDescriptor field) {
        return switch (field.getJavaType()) {
            case STRING -> REDACTED;
            case BYTE_STRING -> ByteString.copyFromUtf8(REDACTED);
            default -> field.getDefaultValue();
        };
    }

    private static void collectSensitive(MessageOrBuilder message, Set<String> out) {
        for (Map.Entry<FieldDescriptor, Object> entry : message.getAllFields().entrySet()) {
            FieldDescriptor field = entry.getKey();
            Object value = entry.getValue();
            if (isSensitive(field)) {
                collectValues(field, value, out);
            } else if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                if (field.isRepeated()) {
                    for (Object element : (List<?>) value) {
                        collectSensitive((MessageOrBuilder) element, out);
                    }
                } else {
                    collectSensitive((MessageOrBuilder) value, out);
                }
            }
        }
    }

    private static void collectValues(FieldDescriptor field, Object value, Set<String> out) {
        if (field.isMapField()) {
            for (Object element : (List<?>) value) {
                Object mapValue = element instanceof MapEntry<?, ?> mapEntry ? mapEntry.getValue()
                        : ((Message) element).getField(((Message) element).getDescriptorForType().findFieldByName("value"));
                addText(mapValue, out);
            }
        } else if (field.isRepeated()) {
            for (Object element : (List<?>) value) {
                addText(element, out);
            }
        } else {
            addText(value, out);
        }
    }

    private static void addText(Object value, Set<String> out) {
        if (value instanceof String text && !text.isEmpty()) {
            out.add(text);
            int equals = text.indexOf('=');
            if (equals >= 0 && equals < text.length() - 1) {
                out.add(text.substring(equals + 1)); // the value part of a key=value mount flag
            }
        } else if (value instanceof ByteString bytes && !bytes.isEmpty()) {
            out.add(bytes.toStringUtf8());
        }
    }
}
