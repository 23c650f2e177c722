package io.csiorchestrator.hostpath;

import io.grpc.Status;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * A line per CSI call the plugin answered, {@code <Method> <CODE>}, appended to
 * {@code <state-dir>/calls.log} before the answer is sent, so another process (a test) can count
 * the calls that reached the plugin once it has the answer. A call whose caller went away before
 * it was answered is logged {@code <Method> CANCELLED}. A line per call received,
 * {@code <Method>}, goes to {@code <state-dir>/calls-started.log} as the call arrives, so a test
 * can tell a call in flight: started but not yet in {@code calls.log}.
 */
public final class CallLog implements AutoCloseable {

    public static final String FILE_NAME = "calls.log";
    public static final String STARTED_FILE_NAME = "calls-started.log";

    /** One answered call. */
    public record Call(String method, Status.Code code) {
    }

    private final FileChannel channel;
    private final FileChannel started;

    public CallLog(Path stateDir) throws IOException {
        this.channel = FileChannel.open(stateDir.resolve(FILE_NAME), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        this.started = FileChannel.open(stateDir.resolve(STARTED_FILE_NAME), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE, StandardOpenOption.APPEND);
    }

    /** A call of {@code method} arrived. */
    public synchronized void started(String method) {
        append(started, method + "\n");
    }

    /** A call of {@code method} ended with {@code code}. */
    public synchronized void record(String method, Status.Code code) {
        append(channel, method + " " + code.name() + "\n");
    }

    private static void append(FileChannel file, String text) {
        ByteBuffer line = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
        try {
            while (line.hasRemaining()) {
                file.write(line);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to the call log", e);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        try {
            channel.close();
        } finally {
            started.close();
        }
    }

    /** The calls recorded in a state dir so far, oldest first. */
    public static List<Call> read(Path stateDir) {
        try {
            return Files.readAllLines(stateDir.resolve(FILE_NAME), StandardCharsets.UTF_8).stream()
                    .map(line -> line.split(" "))
                    .filter(words -> words.length == 2)
                    .map(words -> new Call(words[0], Status.Code.valueOf(words[1])))
                    .toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the call log in " + stateDir, e);
        }
    }

    /** How many calls of {@code method} the plugin in {@code stateDir} received so far. */
    public static long startedCount(Path stateDir, String method) {
        try {
            return Files.readAllLines(stateDir.resolve(STARTED_FILE_NAME), StandardCharsets.UTF_8).stream()
                    .filter(method::equals).count();
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the started-call log in " + stateDir, e);
        }
    }

    /** How many calls of {@code method} the plugin in {@code stateDir} answered so far. */
    public static long count(Path stateDir, String method) {
        return read(stateDir).stream().filter(call -> call.method().equals(method)).count();
    }
}
