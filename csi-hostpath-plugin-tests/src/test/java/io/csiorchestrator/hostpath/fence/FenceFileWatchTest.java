package io.csiorchestrator.hostpath.fence;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.awaitility.Awaitility.await;

import io.csiorchestrator.hostpath.state.StateStore;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchService;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link FenceFileWatch} on the real file system: the fence watcher's only wake-up source besides its recheck. */
class FenceFileWatchTest {

    @TempDir
    Path dir;

    /** A waiter blocked without limit is woken by an atomic write (rename) of fences.json, as FenceStore writes it. */
    @Test
    void anAtomicWriteOfTheFencesFileWakesAWaiterWithoutLimit() throws Exception {
        FenceStore store = new FenceStore(dir);
        try (FenceFileWatch watch = FenceFileWatch.open(store.file())) {
            CompletableFuture<Boolean> woken = CompletableFuture.supplyAsync(() -> {
                try {
                    return watch.awaitChange(-1);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            store.save(FenceBook.empty().request("vol-1", "node-1", Instant.now()));
            await().atMost(Duration.ofSeconds(10)).until(woken::isDone);
            assertTrue(woken.get());
        }
    }

    /**
     * A change of another file in the same directory (the plugin's state files live beside fences.json) does not
     * wake the watcher: the event is delivered (a second, plain watch on the directory sees it first) and then
     * {@code awaitChange} still times out.
     */
    @Test
    void anotherFileInTheDirectoryIsNoChangeOfTheFences() throws Exception {
        FenceStore store = new FenceStore(dir);
        try (FenceFileWatch watch = FenceFileWatch.open(store.file());
             WatchService witness = FileSystems.getDefault().newWatchService()) {
            dir.register(witness, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY);
            StateStore.writeAtomically(dir.resolve("state.json"), "{}".getBytes());
            assertNotNull(witness.poll(10, TimeUnit.SECONDS), "the kernel delivered the other file's event");
            assertFalse(watch.awaitChange(Duration.ofMillis(200).toNanos()));
            store.save(FenceBook.empty());
            assertTrue(watch.awaitChange(Duration.ofSeconds(10).toNanos()));
        }
    }

    /** A change made before the caller starts waiting (but after the watch opened) is not lost. */
    @Test
    void aChangeBeforeTheWaitIsReported() throws Exception {
        FenceStore store = new FenceStore(dir);
        try (FenceFileWatch watch = FenceFileWatch.open(store.file())) {
            store.save(FenceBook.empty());
            assertTrue(watch.awaitChange(Duration.ofSeconds(10).toNanos()));
        }
        assertTrue(Files.exists(store.file()));
    }
}
