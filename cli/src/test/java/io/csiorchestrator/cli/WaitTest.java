package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WaitTest {

    @TempDir
    Path dir;

    /**
     * An unrelated file in the same directory does not end the wait; the wanted file then does. The wait
     * runs on another thread and reports each time it is about to block ({@link Wait.Progress}). After the
     * unrelated file is written, the test waits for a report that comes after the wait took that file's
     * event, which proves the wait saw it, checked again and kept waiting. Only then is the wanted file
     * written.
     */
    @Test
    void anUnrelatedFileDoesNotEndTheWaitButTheWantedFileDoes() throws Exception {
        Path file = dir.resolve("ready.properties");
        CompletableFuture<Void> watching = new CompletableFuture<>();
        CompletableFuture<Void> blockedAfterTheUnrelatedEvent = new CompletableFuture<>();
        CompletableFuture<Void> waiting = CompletableFuture.runAsync(
                () -> Wait.forFile("the file", file, Duration.ofSeconds(30), null, taken -> {
                    watching.complete(null);
                    if (taken.contains(Path.of("other"))) {
                        blockedAfterTheUnrelatedEvent.complete(null);
                    }
                }));
        watching.get(30, TimeUnit.SECONDS);

        Files.writeString(dir.resolve("other"), "x");
        CompletableFuture.anyOf(blockedAfterTheUnrelatedEvent, waiting).get(30, TimeUnit.SECONDS);
        assertFalse(waiting.isDone(), "the wait ended on an unrelated file");
        assertTrue(blockedAfterTheUnrelatedEvent.isDone());

        Files.writeString(file, "x");
        assertDoesNotThrow(() -> waiting.get(30, TimeUnit.SECONDS));
    }

    @Test
    void aFileThatNeverComesTimesOut() {
        Wait.WaitFailed failed = assertThrows(Wait.WaitFailed.class,
                () -> Wait.forFile("the socket", dir.resolve("csi.sock"), Duration.ofMillis(300), null));
        assertTrue(failed.getMessage().contains("timed out"), failed.getMessage());
    }

    @Test
    void theProcessExitingEndsTheWaitAtOnceNamingItsLog() throws Exception {
        Process process = new ProcessBuilder("true").start();
        Cluster.Proc proc = new Cluster.Proc("short-lived", process.toHandle(), dir.resolve("short-lived.log"));
        Wait.WaitFailed failed = assertThrows(Wait.WaitFailed.class, () -> Wait.until("something", Duration.ofMinutes(5),
                proc, java.util.Optional::empty));
        assertTrue(failed.getMessage().contains("short-lived exited"), failed.getMessage());
        assertTrue(failed.getMessage().contains("short-lived.log"), failed.getMessage());
        Wait.WaitFailed noFile = assertThrows(Wait.WaitFailed.class, () -> Wait.forFile("a file",
                dir.resolve("never"), Duration.ofMinutes(5), proc));
        assertTrue(noFile.getMessage().contains("short-lived exited"), noFile.getMessage());
    }
}
