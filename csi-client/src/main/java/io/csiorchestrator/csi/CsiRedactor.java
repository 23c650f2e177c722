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

    private CsiRedactor() {
    }

    /** The message as one line of text, secrets and mount flags blanked. */
    public static String toSafeString(MessageOrBuilder message) {
        if (message == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder(256).append(message.getDescriptorForType().getName()).append(" {");
        int start = out.length();
        printFields(message, out);
        if (out.length() > start) {
            out.setLength(out.length() - 1); // the last field's separator
        }
        return out.append('}').toString();
    }

    /**
     * What {@code TextFormat}'s single-line printer writes for {@link #redact}{@code (message)}, written straight from
     * the message (no redacted copy built, no generic printer): each call of the reference plugin logs its request this
     * way, and the copy and the printer were a tenth of the plugin's CPU (issue 36 item 6). Fields in field number
     * order, separated by a space; the sensitive ones blanked as {@link #redact} blanks them; unknown fields left out.
     */
    static String singleLineOfRedacted(MessageOrBuilder message) {
        StringBuilder out = new StringBuilder(256);
        printFields(message, out);
        if (!out.isEmpty()) {
            out.setLength(out.length() - 1); // no separator after the last field
        }
        return out.toString();
    }

    private static void printFields(MessageOrBuilder message, StringBuilder out) {
        for (Map.Entry<FieldDescriptor, Object> entry : message.getAllFields().entrySet()) {
            FieldDescriptor field = entry.getKey();
            Object value = entry.getValue();
            boolean sensitive = isSensitive(field);
            if (field.isMapField()) {
                for (Message element : byKey((List<?>) value)) { // TextFormat prints a map's entries by key
                    printMapEntry(field, element, sensitive, out);
                }
            } else if (field.isRepeated()) {
                for (Object element : (List<?>) value) {
                    printValue(field, sensitive ? blankElement(field) : element, out);
                }
            } else if (sensitive && field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                // cleared, as blankSingle clears it: not printed
            } else if (sensitive) {
                Object blank = blankScalar(field);
                if (!blank.equals(field.getDefaultValue()) || field.hasPresence()) {
                    printValue(field, blank, out);
                }
            } else {
                printValue(field, value, out);
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static List<Message> byKey(List<?> entries) {
        List<Message> sorted = new ArrayList<>(entries.size());
        for (Object entry : entries) {
            sorted.add((Message) entry);
        }
        if (sorted.size() > 1) {
            FieldDescriptor key = sorted.get(0).getDescriptorForType().findFieldByNumber(1);
            sorted.sort((a, b) -> ((Comparable) a.getField(key)).compareTo(b.getField(key)));
        }
        return sorted;
    }

    private static Object blankElement(FieldDescriptor field) {
        return field.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                ? com.google.protobuf.DynamicMessage.getDefaultInstance(field.getMessageType()) : blankScalar(field);
    }

    /** A map entry as a message of its own; a sensitive one (a secrets map) with its value blanked, as {@link #blank} does. */
    private static void printMapEntry(FieldDescriptor field, Message entry, boolean sensitive, StringBuilder out) {
        Message shown = entry;
        if (sensitive) {
            Message.Builder blanked = entry.toBuilder();
            blankSingle(blanked, entry.getDescriptorForType().findFieldByName("value"));
            shown = blanked.build();
        }
        printValue(field, shown, out);
    }

    private static void printValue(FieldDescriptor field, Object value, StringBuilder out) {
        if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
            out.append(field.getName()).append(" { ");
            printFields((MessageOrBuilder) value, out);
            out.append("} ");
            return;
        }
        out.append(field.getName()).append(": ");
        switch (field.getJavaType()) {
            case STRING -> out.append('"').append(TextFormat.escapeBytes(ByteString.copyFromUtf8((String) value))).append('"');
            case BYTE_STRING -> out.append('"').append(TextFormat.escapeBytes((ByteString) value)).append('"');
            case ENUM -> out.append(((com.google.protobuf.Descriptors.EnumValueDescriptor) value).getName());
            default -> out.append(value);
        }
        out.append(' ');
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
