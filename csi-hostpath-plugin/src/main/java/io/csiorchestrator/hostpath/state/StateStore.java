package io.csiorchestrator.hostpath.state;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * Keeps the plugin's state in JSON files in the state dir (compact: no indentation), each written atomically: a
 * temporary file is written and fsynced, renamed over the old one, and the directory fsynced, so a crash leaves either
 * the old or the new state, never a torn one. The files are read at start only: the plugin keeps its state in memory
 * and writes a file when its part of the state changes, before it answers.
 *
 * <p>With a shared dir, the controller half lives there, shared by the plugin's processes on every node, in two files
 * that change at different rates: the volumes in {@code <shared-dir>/controller-state.json} (changed by CreateVolume,
 * DeleteVolume, expansion) and the controller publications in {@code <shared-dir>/controller-publications.json}
 * (changed by every ControllerPublish and ControllerUnpublish, and as small as the publications live now). Only the
 * node half (stagings, node publications) is in the state dir. Each file is written only when its part changed.
 * Processes sharing the dir serialize their operations with {@link #lockShared()}. The lock file holds a counter per
 * shared file (8 bytes each: the volumes', then the publications'), raised by a process before it writes that file:
 * under the lock, {@link #refresh} reads a shared file again only when its counter moved since this process last read
 * or wrote it. So a claim's controller calls read and write the publications alone, never the list of every volume
 * (issue 36 item 6: with 100 volumes that list is 13 KB, and it was read and written again by nearly every call of
 * two processes sharing the dir).
 *
 * <p>With a shared dir the node half's changes are appended to a journal beside its file ({@link NodeJournal}): a
 * NodeStage or NodePublish writes its one change, not every staging and publication of the node again.
 *
 * <p>A shared dir written before the split (the publications inside {@code controller-state.json}, one counter) is
 * read as such until this version first writes it: the publications file is written before the volumes file is ever
 * rewritten without them. Every process sharing a dir must be of this version or later.
 */
public final class StateStore {

    public static final String FILE_NAME = "plugin-state.json";
    public static final String SHARED_FILE_NAME = "controller-state.json";
    public static final String SHARED_LOCK_NAME = "controller-state.lock";
    public static final String SHARED_PUBLICATIONS_FILE_NAME = "controller-publications.json";

    /** The lock file's counters: where each shared file's counter is. */
    private static final long VOLUMES_COUNTER = 0;
    private static final long PUBLICATIONS_COUNTER = Long.BYTES;

    private static final ObjectMapper JSON = new ObjectMapper()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private final Path file;
    private final Path sharedFile;
    private final Path sharedPublications;
    private final Path sharedLock;
    /** The node half's changes since {@link #file} was written; with a shared dir only (null without). */
    private final NodeJournal journal;
    /** The volumes' counter in the lock file when this process last read or wrote them; -1 before the first read. */
    private long volumesGeneration = -1;
    /** The same for the controller publications. */
    private long publicationsGeneration = -1;
    /** The lock file, open while this process holds the lock ({@link #lockShared()}). */
    private FileChannel lockedChannel;

    public StateStore(Path stateDir) {
        this(stateDir, null);
    }

    /** {@code sharedDir} may be null: then everything is in the state dir. */
    public StateStore(Path stateDir, Path sharedDir) {
        this.file = stateDir.resolve(FILE_NAME);
        this.sharedFile = sharedDir == null ? null : sharedDir.resolve(SHARED_FILE_NAME);
        this.sharedPublications = sharedDir == null ? null : sharedDir.resolve(SHARED_PUBLICATIONS_FILE_NAME);
        this.sharedLock = sharedDir == null ? null : sharedDir.resolve(SHARED_LOCK_NAME);
        this.journal = sharedDir == null ? null : new NodeJournal(stateDir);
    }

    public boolean shared() {
        return sharedFile != null;
    }

    /** Closes the node journal's file, if open; a later change opens it again. */
    public void close() {
        if (journal != null) {
            journal.close();
        }
    }

    /**
     * Takes the lock every process sharing the dir holds while it reads and changes the state (a
     * POSIX record lock: released by the kernel when the process dies); null without a shared dir.
     * One lock at a time per store (the caller serializes its operations).
     */
    public FileLock lockShared() {
        if (sharedLock == null) {
            return null;
        }
        try {
            FileChannel channel = FileChannel.open(sharedLock, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
            try {
                FileLock lock = channel.lock();
                lockedChannel = channel;
                return lock;
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lock the shared plugin state " + sharedLock, e);
        }
    }

    /** Releases a lock from {@link #lockShared()} and closes its file. */
    public void unlock(FileLock lock) {
        if (lock == null) {
            return;
        }
        lockedChannel = null;
        try (FileChannel channel = lock.channel()) {
            lock.release();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unlock the shared plugin state", e);
        }
    }

    /**
     * Under the lock of {@link #lockShared()}: {@code current} with the shared half as saved, each of its files read
     * again only when another process changed it since this one last read or wrote it (its counter moved). The node
     * half is this process's own and is never read again.
     */
    public PluginState refresh(PluginState current) {
        if (sharedFile == null) {
            return current;
        }
        long volumes = generation(VOLUMES_COUNTER);
        long publications = generation(PUBLICATIONS_COUNTER);
        boolean volumesMoved = volumes != volumesGeneration;
        // before the split the publications were in the volumes file: read with it while no publications file exists
        boolean publicationsMoved = publications != publicationsGeneration
                || (volumesMoved && !Files.exists(sharedPublications));
        if (!volumesMoved && !publicationsMoved) {
            return current;
        }
        PluginState volumesSaved = volumesMoved ? read(sharedFile) : null;
        PluginState next = new PluginState(volumesMoved ? volumesSaved.volumes() : current.volumes(),
                publicationsMoved ? readPublications(volumesSaved) : current.controllerPublications(),
                current.stagings(), current.nodePublications());
        volumesGeneration = volumes;
        publicationsGeneration = publications;
        return next;
    }

    public Path file() {
        return file;
    }

    /** The saved state, or the empty state when none was saved yet. */
    public PluginState load() {
        PluginState local = read(file);
        if (sharedFile == null) {
            return local;
        }
        local = journal.replay(local);
        PluginState volumesSaved = read(sharedFile);
        return new PluginState(volumesSaved.volumes(), readPublications(volumesSaved), local.stagings(),
                local.nodePublications());
    }

    /**
     * The controller publications as saved: their own file, or the volumes file's when written before the split
     * ({@code volumesSaved}, that file as just read, or null to read it).
     */
    private List<ControllerPublication> readPublications(PluginState volumesSaved) {
        if (Files.exists(sharedPublications)) {
            return read(sharedPublications).controllerPublications();
        }
        return (volumesSaved != null ? volumesSaved : read(sharedFile)).controllerPublications();
    }

    public void save(PluginState state) {
        save(null, state);
    }

    /** Saves {@code next}; with a shared dir, only the files whose part differs from {@code previous}'s. */
    public void save(PluginState previous, PluginState next) {
        if (sharedFile == null) {
            write(file, next);
            return;
        }
        boolean volumesChanged = previous == null || !previous.volumes().equals(next.volumes());
        // the publications file is written before the volumes file is first rewritten without them (a dir from before
        // the split keeps them in the volumes file until then)
        if (previous == null || !previous.controllerPublications().equals(next.controllerPublications())
                || (volumesChanged && !Files.exists(sharedPublications))) {
            // each counter is raised before its file is written: a crash in between makes the others read it again, no more
            publicationsGeneration = raise(PUBLICATIONS_COUNTER);
            write(sharedPublications, new PluginState(null, next.controllerPublications(), null, null));
        }
        if (volumesChanged) {
            volumesGeneration = raise(VOLUMES_COUNTER);
            write(sharedFile, new PluginState(next.volumes(), null, null, null));
        }
        // the node half: its changes appended to the journal; the whole half written again only when the journal is
        // due to be compacted (or on a save without a previous state), then the journal emptied
        if (previous == null || journal.append(previous, next)) {
            write(file, new PluginState(null, null, next.stagings(), next.nodePublications()));
            journal.clear();
        }
    }

    /** Raises the counter at {@code offset} and answers its new value; only under the lock. */
    private long raise(long offset) {
        long generation = generation(offset) + 1;
        setGeneration(offset, generation);
        return generation;
    }

    /** The counter at {@code offset} in the lock file (0 while it holds none); only under the lock. */
    private long generation(long offset) {
        FileChannel channel = requireLocked();
        ByteBuffer buffer = ByteBuffer.allocate(Long.BYTES);
        try {
            while (buffer.hasRemaining()) {
                if (channel.read(buffer, offset + buffer.position()) < 0) {
                    return 0;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the counter of the shared plugin state in " + sharedLock, e);
        }
        return buffer.flip().getLong();
    }

    /**
     * Not fsynced: the counter only tells running processes that their copy is stale, and a machine crash ends them
     * all (each reads the files afresh at start).
     */
    private void setGeneration(long offset, long generation) {
        FileChannel channel = requireLocked();
        ByteBuffer buffer = ByteBuffer.allocate(Long.BYTES).putLong(generation).flip();
        try {
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the counter of the shared plugin state in " + sharedLock, e);
        }
    }

    private FileChannel requireLocked() {
        if (lockedChannel == null) {
            throw new IllegalStateException("the shared plugin state is read and written under lockShared()");
        }
        return lockedChannel;
    }

    private static PluginState read(Path path) {
        if (!Files.exists(path)) {
            return PluginState.empty();
        }
        try {
            return JSON.readValue(path.toFile(), PluginState.class);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the plugin state " + path, e);
        }
    }

    private static void write(Path path, PluginState state) {
        try {
            writeAtomicallyReusingInodes(path, JSON.writeValueAsBytes(state));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the plugin state " + path, e);
        }
    }

    /**
     * As {@link #writeAtomically}, written to a spare file that keeps the inode of the content before the last one
     * ({@code .<name>.spare}), so that a write neither allocates nor frees an inode. The state files are written on
     * every change, and on ext4 without a journal (this project's machine) every new inode costs a scan past the
     * recently deleted ones, about 0.5 ms of CPU each under load (perf: {@code recently_deleted} from
     * {@code __ext4_new_inode} from {@code openat}). Steps: truncate and write the spare, fsync it; link the current
     * file as {@code .<name>.keep}; rename the spare over the file; fsync the directory; rename the keep to the spare.
     * The file itself is never written in place: a crash at any step leaves it whole, old or new; a spare or keep left
     * by a crash is reused or replaced by the next write.
     */
    public static void writeAtomicallyReusingInodes(Path target, byte[] content) throws IOException {
        Path directory = target.toAbsolutePath().getParent();
        Path spare = directory.resolve("." + target.getFileName() + ".spare");
        Path keep = directory.resolve("." + target.getFileName() + ".keep");
        boolean targetExists = Files.exists(target);
        if (targetExists && Files.exists(spare) && Files.isSameFile(spare, target)) {
            Files.delete(spare); // never the case when written by this method; never truncate the file itself
        }
        try (FileChannel channel = FileChannel.open(spare, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
        Files.deleteIfExists(keep);
        boolean kept = false;
        if (targetExists) {
            try {
                Files.createLink(keep, target);
                kept = true;
            } catch (IOException | UnsupportedOperationException e) {
                // a file system without hard links: the old inode is freed, as by writeAtomically
            }
        }
        Files.move(spare, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        }
        if (kept) {
            Files.move(keep, spare, StandardCopyOption.ATOMIC_MOVE);
        }
    }

    /** Writes a file so that readers see the old or the new content, also across a crash. */
    public static void writeAtomically(Path target, byte[] content) throws IOException {
        Path directory = target.toAbsolutePath().getParent();
        Path temporary = directory.resolve("." + target.getFileName() + ".tmp");
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
        try {
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING);
        }
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        }
    }
}
