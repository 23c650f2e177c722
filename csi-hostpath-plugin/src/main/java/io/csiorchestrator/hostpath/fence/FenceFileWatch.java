package io.csiorchestrator.hostpath.fence;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.concurrent.TimeUnit;

/**
 * Wakes its caller when {@code fences.json} is written (by this or another process of the plugin on this machine),
 * through the kernel's file notifications (inotify on Linux): no periodic stat, nothing done while nobody fences.
 * The file is replaced by a rename, so the watch is on its directory and filtered by name; a lost-events overflow
 * counts as a change. Callers read the file again after a wake-up; a change between their last read and
 * {@link #awaitChange} is still reported, since the watch is registered before they read.
 */
public final class FenceFileWatch implements AutoCloseable {

    private final WatchService service;
    private final Path fileName;

    private FenceFileWatch(WatchService service, Path fileName) {
        this.service = service;
        this.fileName = fileName;
    }

    /** Starts watching {@code file} (its directory must exist). Open it before reading the file. */
    public static FenceFileWatch open(Path file) {
        try {
            WatchService service = FileSystems.getDefault().newWatchService();
            try {
                file.getParent().register(service, StandardWatchEventKinds.ENTRY_CREATE,
                        StandardWatchEventKinds.ENTRY_MODIFY, StandardWatchEventKinds.ENTRY_DELETE);
            } catch (IOException | RuntimeException e) {
                service.close();
                throw e;
            }
            return new FenceFileWatch(service, file.getFileName());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot watch " + file, e);
        }
    }

    /**
     * Waits until the file changed or {@code timeoutNanos} passed (a negative timeout waits without limit).
     *
     * @return true if the file changed (or events were lost), false on timeout
     * @throws InterruptedException if the waiting thread is interrupted
     */
    public boolean awaitChange(long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        while (true) {
            WatchKey key;
            try {
                if (timeoutNanos < 0) {
                    key = service.take();
                } else {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    key = service.poll(left, TimeUnit.NANOSECONDS);
                    if (key == null) {
                        return false;
                    }
                }
            } catch (ClosedWatchServiceException e) {
                throw new InterruptedException("the fence file watch was closed");
            }
            boolean changed = false;
            for (WatchEvent<?> event : key.pollEvents()) {
                if (event.kind() == StandardWatchEventKinds.OVERFLOW || fileName.equals(event.context())) {
                    changed = true;
                }
            }
            key.reset();
            if (changed) {
                return true;
            }
        }
    }

    @Override
    public void close() {
        try {
            service.close();
        } catch (IOException e) {
            // nothing to release beyond the descriptor
        }
    }
}
