package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WaitTest {

    @TempDir
    Path dir;

    @Test
    void aFileMadeWhileWaitingEndsTheWait() throws Exception {
        Path file = dir.resolve("ready.properties");
        CompletableFuture<Void> waiting = CompletableFuture.runAsync(
                () -> Wait.forFile("the file", file, Duration.ofSeconds(30), null));
        Files.writeString(dir.resolve("other"), "x"); // an unrelated event does not end it
        Files.writeString(file, "x");
        assertDoesNotThrow(() -> waiting.get(30, java.util.concurrent.TimeUnit.SECONDS));
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
