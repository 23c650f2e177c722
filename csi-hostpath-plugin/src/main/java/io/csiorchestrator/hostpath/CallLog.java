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
 * the calls that reached the plugin once it has the answer.
 */
public final class CallLog implements AutoCloseable {

    public static final String FILE_NAME = "calls.log";

    /** One answered call. */
    public record Call(String method, Status.Code code) {
    }

    private final FileChannel channel;

    public CallLog(Path stateDir) throws IOException {
        this.channel = FileChannel.open(stateDir.resolve(FILE_NAME), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE, StandardOpenOption.APPEND);
    }

    public synchronized void record(String method, Status.Code code) {
        ByteBuffer line = ByteBuffer.wrap((method + " " + code.name() + "\n").getBytes(StandardCharsets.UTF_8));
        try {
            while (line.hasRemaining()) {
                channel.write(line);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to the call log", e);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        channel.close();
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

    /** How many calls of {@code method} the plugin in {@code stateDir} answered so far. */
    public static long count(Path stateDir, String method) {
        return read(stateDir).stream().filter(call -> call.method().equals(method)).count();
    }
}
