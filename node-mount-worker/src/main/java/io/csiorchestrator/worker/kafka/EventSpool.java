package io.csiorchestrator.worker.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.csiorchestrator.worker.state.AtomicFiles;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.jboss.logging.Logger;

/**
 * Records kept on disk until the broker acknowledged them, so that they survive a crash or a
 * restart of the worker while Kafka is unreachable: one file per record in
 * {@code <root>/events/} ({@link WorkerPaths#eventsDir()}), named by a zero-padded sequence
 * number ({@code 00000000000000000042.json}), written atomically ({@link AtomicFiles#write}) and
 * deleted once acknowledged. The file is JSON:
 *
 * <pre>
 * {"spool": 1, "topic": "...", "key": "..." | null,
 *  "headers": [{"name": "ce_id", "value": "&lt;base64&gt;" | null}, ...],
 *  "value": "&lt;base64&gt;" | null}
 * </pre>
 *
 * All headers are kept in order (the CloudEvents headers with the original {@code ce_id}, the W3C
 * {@code traceparent}/{@code tracestate}); partition and timestamp are not (the broker's
 * partitioner and clock decide again). {@link #loadAll()} returns the records in sequence order;
 * a file it cannot read is logged (by name, never its content) and set aside as
 * {@code <name>.corrupt}; leftover temporary files of an interrupted write are removed. New
 * records continue after the highest sequence found in the directory.
 */
public final class EventSpool {

    private static final Logger LOG = Logger.getLogger(EventSpool.class);
    static final int FORMAT = 1;
    static final String SUFFIX = ".json";
    static final String CORRUPT_SUFFIX = ".corrupt";
    private static final Pattern NAME = Pattern.compile("^(\\d{20})\\.json");

    /** One spooled record and its sequence number (pass it to {@link #delete}). */
    public record Spooled(long sequence, ProducerRecord<String, byte[]> record) {
    }

    private final Path dir;
    private final ObjectMapper json = new ObjectMapper();
    private final AtomicLong next;

    /** The spool under the worker's root, its directory created (mode 0700) when missing. */
    public static EventSpool open(WorkerPaths paths) throws IOException {
        Path dir = paths.eventsDir();
        paths.ensureDirectory(dir);
        return new EventSpool(dir);
    }

    EventSpool(Path dir) throws IOException {
        this.dir = Objects.requireNonNull(dir, "dir");
        long highest = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path file : files) {
                long sequence = sequenceOf(file.getFileName().toString());
                highest = Math.max(highest, sequence);
            }
        }
        next = new AtomicLong(highest + 1);
    }

    public Path directory() {
        return dir;
    }

    /** The file of the record with this sequence number. */
    public Path fileOf(long sequence) {
        return dir.resolve(String.format("%020d", sequence) + SUFFIX);
    }

    /** Writes {@code record} durably; returns its sequence number. */
    public long write(ProducerRecord<String, byte[]> record) throws IOException {
        ObjectNode node = json.createObjectNode();
        node.put("spool", FORMAT);
        node.put("topic", record.topic());
        node.put("key", record.key());
        ArrayNode headers = node.putArray("headers");
        for (Header header : record.headers()) {
            ObjectNode h = headers.addObject();
            h.put("name", header.key());
            h.put("value", header.value() == null ? null : Base64.getEncoder().encodeToString(header.value()));
        }
        node.put("value", record.value() == null ? null : Base64.getEncoder().encodeToString(record.value()));
        long sequence = next.getAndIncrement();
        AtomicFiles.write(fileOf(sequence), json.writeValueAsBytes(node));
        return sequence;
    }

    /**
     * Deletes the file of an acknowledged (or dropped) record. A failure is logged and the file
     * stays: its record is sent again at the next start, with the same {@code ce_id}. The deletion
     * is not made durable by itself (no fsync of the directory: the next spooled record's write
     * does that): a crash that loses it only sends the record again, which every consumer takes
     * as a duplicate (at-least-once delivery).
     */
    public void delete(long sequence) {
        Path file = fileOf(sequence);
        try {
            Files.deleteIfExists(file);
        } catch (IOException | RuntimeException e) {
            LOG.warnf("could not delete the event spool file %s (%s: %s); its event will be sent again at the next start",
                    file, e.getClass().getSimpleName(), e.getMessage());
        }
    }

    /**
     * Every spooled record, in sequence order. Unreadable files are set aside as
     * {@code *.corrupt} with a WARN naming them; a directory that cannot be listed is logged and
     * yields nothing. Never throws.
     */
    public List<Spooled> loadAll() {
        List<Path> candidates = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                if (AtomicFiles.isTemporary(name)) {
                    try {
                        Files.deleteIfExists(file);
                    } catch (IOException e) {
                        LOG.warnf("could not remove the leftover temporary file %s of the event spool (%s)", file,
                                e.getMessage());
                    }
                } else if (name.endsWith(SUFFIX) && sequenceOf(name) > 0) {
                    candidates.add(file);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warnf("cannot list the event spool directory %s (%s: %s); events spooled before this start are not sent",
                    dir, e.getClass().getSimpleName(), e.getMessage());
            return List.of();
        }
        candidates.sort(Comparator.comparingLong(f -> sequenceOf(f.getFileName().toString())));
        List<Spooled> loaded = new ArrayList<>();
        for (Path file : candidates) {
            try {
                loaded.add(new Spooled(sequenceOf(file.getFileName().toString()), read(file)));
            } catch (IOException | RuntimeException e) {
                setAside(file, e);
            }
        }
        return loaded;
    }

    private ProducerRecord<String, byte[]> read(Path file) throws IOException {
        JsonNode node = json.readTree(Files.readAllBytes(file));
        if (node == null || !node.isObject()) {
            throw new IOException("not a JSON object");
        }
        if (node.path("spool").asInt(-1) != FORMAT) {
            throw new IOException("field 'spool' is not " + FORMAT);
        }
        JsonNode topic = node.get("topic");
        if (topic == null || !topic.isTextual() || topic.asText().isEmpty()) {
            throw new IOException("field 'topic' is missing or not a non-empty string");
        }
        String key = optionalText(node, "key");
        RecordHeaders headers = new RecordHeaders();
        JsonNode list = node.get("headers");
        if (list == null || !list.isArray()) {
            throw new IOException("field 'headers' is missing or not an array");
        }
        for (JsonNode h : list) {
            JsonNode name = h.get("name");
            if (name == null || !name.isTextual()) {
                throw new IOException("a header has no string 'name'");
            }
            headers.add(name.asText(), bytes(h, "headers[" + name.asText() + "].value"));
        }
        byte[] value = bytes(node, "value");
        return new ProducerRecord<>(topic.asText(), null, null, key, value, headers);
    }

    private static String optionalText(JsonNode node, String field) throws IOException {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new IOException("field '" + field + "' is not a string");
        }
        return v.asText();
    }

    private static byte[] bytes(JsonNode node, String what) throws IOException {
        JsonNode v = node.get("value");
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new IOException("field '" + what + "' is not a base64 string");
        }
        try {
            return Base64.getDecoder().decode(v.asText().getBytes(StandardCharsets.US_ASCII));
        } catch (IllegalArgumentException e) {
            throw new IOException("field '" + what + "' is not valid base64");
        }
    }

    private void setAside(Path file, Exception cause) {
        // the reason names the field or the parser's exception class, never the file's content
        String reason = cause instanceof IOException && cause.getClass() == IOException.class
                ? cause.getMessage() : cause.getClass().getSimpleName();
        Path aside = file.resolveSibling(file.getFileName() + CORRUPT_SUFFIX);
        try {
            Files.move(file, aside, StandardCopyOption.REPLACE_EXISTING);
            AtomicFiles.fsyncDirectory(dir);
            LOG.warnf("the event spool file %s is unreadable (%s); set aside as %s, its event is not sent", file, reason,
                    aside);
        } catch (IOException | RuntimeException e) {
            LOG.warnf("the event spool file %s is unreadable (%s) and could not be set aside as %s (%s); skipped",
                    file, reason, aside, e.getMessage());
        }
    }

    /** The sequence number a spool file name starts with, or 0 for any other name. */
    static long sequenceOf(String fileName) {
        Matcher m = NAME.matcher(fileName);
        if (!m.find()) {
            return 0;
        }
        try {
            return Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
