package io.csiorchestrator.hostpath.state;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The node half's changes since its snapshot ({@code plugin-state.json}): one JSON line per changed staging or node
 * publication in {@code plugin-state.journal}, appended and fdatasynced before the call answers (issue 36 item 6). A
 * NodeStage or NodePublish used to write the whole node half again (every staging and publication of the node, 16 KB
 * at 50 volumes) with two fsyncs and a rename; now it writes its one change. After {@link #COMPACT_AFTER} lines the
 * snapshot is written again and the journal emptied ({@link StateStore}).
 *
 * <p>Each line sets or removes one key to its final value, so replaying lines that the snapshot already holds (a crash
 * after the snapshot was written and before the journal was emptied) gives the same state. A last line without its
 * newline, or one that does not parse, is a write the crash cut: its call never answered, it is dropped and the file
 * cut back to the last whole line. A broken line before the last is not a crash's work: the journal is refused,
 * naming the file and the line.
 */
public final class NodeJournal {

    public static final String FILE_NAME = "plugin-state.journal";

    /** Lines before the snapshot is written again: at about 250 bytes a line, a journal of at most 128 KB to replay. */
    public static final int COMPACT_AFTER = 512;

    private static final ObjectMapper JSON = new ObjectMapper()
            .setSerializationInclusion(JsonInclude.Include.NON_NULL)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    /**
     * One change: {@code staged} (a volume id) with its staging, or without it when removed; or {@code published} (a
     * target path) with its node publication, or without it.
     */
    record Change(String staged, Staging staging, String published, NodePublication publication) {
    }

    private final Path file;
    private final int compactAfter;
    private FileChannel channel;
    private int lines;

    public NodeJournal(Path stateDir) {
        this(stateDir, COMPACT_AFTER);
    }

    NodeJournal(Path stateDir, int compactAfter) {
        this.file = stateDir.resolve(FILE_NAME);
        this.compactAfter = compactAfter;
    }

    public Path file() {
        return file;
    }

    /** The node half of {@code snapshot} with the journal's changes applied; a torn last line is cut off the file. */
    public PluginState replay(PluginState snapshot) {
        TreeMap<String, Staging> stagings = new TreeMap<>(snapshot.stagings());
        TreeMap<String, NodePublication> publications = new TreeMap<>(snapshot.nodePublications());
        byte[] bytes;
        try {
            bytes = Files.exists(file) ? Files.readAllBytes(file) : new byte[0];
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the plugin's journal " + file, e);
        }
        int start = 0;
        int line = 0;
        lines = 0;
        while (start < bytes.length) {
            int end = indexOf(bytes, (byte) '\n', start);
            line++;
            Change change = end < 0 ? null : parse(bytes, start, end);
            if (change == null) {
                if (end < 0 || end == bytes.length - 1) {
                    cut(start); // the crash's torn write: that call never answered
                    break;
                }
                throw new IllegalStateException("the plugin's journal " + file + " is damaged at line " + line
                        + " (not a change, and not the last line a crash could have cut)");
            }
            apply(change, stagings, publications);
            lines++;
            start = end + 1;
        }
        return new PluginState(snapshot.volumes(), snapshot.controllerPublications(), stagings, publications);
    }

    /**
     * Appends the node half's changes from {@code previous} to {@code next} and fdatasyncs them; answers whether the
     * journal is due to be compacted (its snapshot written, then {@link #clear()}).
     */
    public boolean append(PluginState previous, PluginState next) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        int added = changes(previous.stagings(), next.stagings(), out, true)
                + changes(previous.nodePublications(), next.nodePublications(), out, false);
        if (added == 0) {
            return false;
        }
        try {
            FileChannel open = channel();
            ByteBuffer buffer = ByteBuffer.wrap(out.toByteArray());
            while (buffer.hasRemaining()) {
                open.write(buffer);
            }
            open.force(false);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to the plugin's journal " + file, e);
        }
        lines += added;
        return lines >= compactAfter;
    }

    /** Empties the journal once its snapshot holds every change (written and fsynced by the caller). */
    public void clear() {
        cut(0);
        lines = 0;
    }

    private <V> int changes(SortedMap<String, V> before, SortedMap<String, V> after, ByteArrayOutputStream out,
                            boolean stagings) {
        if (before.equals(after)) {
            return 0;
        }
        int count = 0;
        for (Map.Entry<String, V> entry : after.entrySet()) {
            if (!Objects.equals(before.get(entry.getKey()), entry.getValue())) {
                write(out, change(stagings, entry.getKey(), entry.getValue()));
                count++;
            }
        }
        for (String key : before.keySet()) {
            if (!after.containsKey(key)) {
                write(out, change(stagings, key, null));
                count++;
            }
        }
        return count;
    }

    private static Change change(boolean staging, String key, Object value) {
        return staging ? new Change(key, (Staging) value, null, null)
                : new Change(null, null, key, (NodePublication) value);
    }

    private static void write(ByteArrayOutputStream out, Change change) {
        try {
            out.write(JSON.writeValueAsBytes(change));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write a change of the plugin's state", e);
        }
        out.write('\n');
    }

    private static void apply(Change change, Map<String, Staging> stagings, Map<String, NodePublication> publications) {
        if (change.staged() != null) {
            if (change.staging() == null) {
                stagings.remove(change.staged());
            } else {
                stagings.put(change.staged(), change.staging());
            }
        } else if (change.publication() == null) {
            publications.remove(change.published());
        } else {
            publications.put(change.published(), change.publication());
        }
    }

    /** The change on bytes [start, end), or null when it is not one (cut by a crash). */
    private static Change parse(byte[] bytes, int start, int end) {
        try {
            Change change = JSON.readValue(bytes, start, end - start, Change.class);
            boolean staged = change.staged() != null;
            boolean published = change.published() != null;
            return staged != published ? change : null;
        } catch (IOException e) {
            return null;
        }
    }

    private void cut(long size) {
        try {
            FileChannel open = channel();
            open.truncate(size);
            open.position(size);
            open.force(true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot cut the plugin's journal " + file, e);
        }
    }

    /** Closes the journal's file, if open (it stays open between changes); the next change opens it again. */
    public void close() {
        if (channel == null) {
            return;
        }
        try {
            channel.close();
        } catch (IOException e) {
            // every line appended was fdatasynced when it was written: nothing waits in this channel
        } finally {
            channel = null;
        }
    }

    private FileChannel channel() throws IOException {
        if (channel == null) {
            boolean created = !Files.exists(file);
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            channel.position(channel.size());
            if (created) {
                try (FileChannel dir = FileChannel.open(file.toAbsolutePath().getParent(), StandardOpenOption.READ)) {
                    dir.force(true); // the new file's name, so that its fdatasynced lines are found after a crash
                }
            }
        }
        return channel;
    }

    private static int indexOf(byte[] bytes, byte value, int from) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == value) {
                return i;
            }
        }
        return -1;
    }
}
