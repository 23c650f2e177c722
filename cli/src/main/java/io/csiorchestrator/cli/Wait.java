package io.csiorchestrator.cli;

import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Bounded waits for the CLI's child processes. A file a process writes is awaited on the file
 * system's events ({@link #forFile}); a condition with no event to listen to (a health endpoint)
 * is checked again on a scheduler after a small, growing interval ({@link #until}). Both end, with
 * the process' log named, when the process they wait on exits.
 */
public final class Wait {

    /** A wait that ended without its condition. */
    public static final class WaitFailed extends RuntimeException {
        public WaitFailed(String message) {
            super(message);
        }
    }

    private Wait() {
    }

    /**
     * Until {@code check} gives a value: checked at once, then on a scheduler after 50 ms, 100 ms, ...
     * at most 500 ms apart; each wait also ends the moment the process exits.
     */
    public static <T> T until(String what, Duration timeout, Cluster.Proc proc, Supplier<Optional<T>> check) {
        long deadline = System.nanoTime() + timeout.toNanos();
        CompletableFuture<?> exit = proc == null ? new CompletableFuture<>() : proc.handle().onExit();
        long interval = 0;
        while (true) {
            CompletableFuture<Optional<T>> next = CompletableFuture.supplyAsync(check,
                    CompletableFuture.delayedExecutor(interval, TimeUnit.MILLISECONDS));
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            try {
                CompletableFuture.anyOf(next, exit).get(Math.max(left, 0), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                next.cancel(false);
                throw timedOut(what, timeout, proc);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof RuntimeException failure) {
                    throw failure;
                }
                throw new WaitFailed("cannot check " + what + ": " + e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new WaitFailed("interrupted while waiting for " + what);
            }
            if (next.isDone()) {
                Optional<T> value = next.join();
                if (value.isPresent()) {
                    return value.get();
                }
            }
            if (exit.isDone()) {
                throw exited(what, proc);
            }
            interval = interval == 0 ? 50 : Math.min(interval * 2, 500);
        }
    }

    /** Until {@code file} exists (a socket, a file written by rename), on the directory's watch events. */
    public static void forFile(String what, Path file, Duration timeout, Cluster.Proc proc) {
        forFile(what, file, timeout, proc, taken -> {
        });
    }

    /**
     * What {@link #forFile} reports about itself, for tests: called each time it has checked that the
     * file is still missing and is about to block on the watcher, with the names of the directory
     * events it took since the previous call (none on the first).
     */
    interface Progress {
        void blocking(List<Path> eventsTaken);
    }

    static void forFile(String what, Path file, Duration timeout, Cluster.Proc proc, Progress progress) {
        List<Path> taken = new ArrayList<>();
        Path directory = file.toAbsolutePath().getParent();
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            Files.createDirectories(directory);
            try (WatchService watcher = directory.getFileSystem().newWatchService()) {
                directory.register(watcher, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY);
                // Registered first, checked second: a file made in between is seen by the check.
                while (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
                    long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    if (left <= 0) {
                        throw timedOut(what, timeout, proc);
                    }
                    if (proc != null && !proc.handle().isAlive()) {
                        throw exited(what, proc);
                    }
                    progress.blocking(List.copyOf(taken));
                    taken.clear();
                    // Bounded so that the process' exit is noticed within a second.
                    WatchKey key = watcher.poll(Math.min(left, 1000), TimeUnit.MILLISECONDS);
                    if (key != null) {
                        for (WatchEvent<?> event : key.pollEvents()) {
                            if (event.context() instanceof Path name) {
                                taken.add(name);
                            }
                        }
                        key.reset();
                    }
                }
            }
        } catch (IOException | ClosedWatchServiceException e) {
            throw new WaitFailed("cannot watch " + directory + " for " + what + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WaitFailed("interrupted while waiting for " + what);
        }
    }

    private static WaitFailed exited(String what, Cluster.Proc proc) {
        return new WaitFailed(proc.name() + " exited while waiting for " + what + " (log: " + proc.log() + ")");
    }

    private static WaitFailed timedOut(String what, Duration timeout, Cluster.Proc proc) {
        return new WaitFailed("timed out after " + timeout.toSeconds() + " s waiting for " + what
                + (proc == null ? "" : " (log: " + proc.log() + ")"));
    }
}
