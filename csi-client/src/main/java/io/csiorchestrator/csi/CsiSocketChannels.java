package io.csiorchestrator.csi;

import io.grpc.ConnectivityState;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.smallrye.mutiny.Uni;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Opens gRPC channels to CSI plugins over unix domain sockets (grpc-java with Netty epoll), and
 * connects them eagerly, so that a missing or inaccessible socket is reported at once and by name
 * instead of as a bare UNAVAILABLE on the first call.
 */
public final class CsiSocketChannels {

    private static final String UNIX_SCHEME = "unix://";

    private CsiSocketChannels() {
    }

    /** The socket path of a CSI endpoint such as {@code unix:///var/run/csi/csi.sock} or a plain path. */
    public static Path socketPathOf(String endpoint) {
        if (endpoint == null || endpoint.isBlank()) {
            throw new IllegalArgumentException("empty CSI endpoint");
        }
        String path = endpoint.startsWith(UNIX_SCHEME) ? endpoint.substring(UNIX_SCHEME.length()) : endpoint;
        if (path.startsWith("unix:") || path.contains("://")) {
            throw new IllegalArgumentException("CSI endpoint must be unix:///absolute/path or a path, got " + endpoint);
        }
        Path socket = Path.of(path);
        if (!socket.isAbsolute()) {
            throw new IllegalArgumentException("CSI socket path must be absolute, got " + endpoint);
        }
        return socket.normalize();
    }

    /**
     * Opens a channel to the socket and waits, up to {@code connectTimeout}, until it is connected.
     * Fails with a {@link CsiSocketException} naming the socket when the connection fails or the
     * deadline passes; the channel is then shut down.
     */
    public static Uni<ManagedChannel> open(Path socketPath, Duration connectTimeout) {
        Path socket = socketPath.toAbsolutePath().normalize();
        return Uni.createFrom().<ManagedChannel>emitter(emitter -> {
                    ManagedChannel channel;
                    try {
                        channel = Grpc.newChannelBuilder(UNIX_SCHEME + socket, InsecureChannelCredentials.create())
                                .overrideAuthority("localhost")
                                .disableRetry() // the CSI retry policy decides, not gRPC
                                .build();
                    } catch (RuntimeException e) {
                        emitter.fail(new CsiSocketException(socket, e.getMessage(), e));
                        return;
                    }
                    AtomicBoolean delivered = new AtomicBoolean();
                    emitter.onTermination(() -> {
                        if (!delivered.get()) {
                            channel.shutdownNow();
                        }
                    });
                    new Runnable() {
                        @Override
                        public void run() {
                            ConnectivityState state = channel.getState(true);
                            switch (state) {
                                case READY -> {
                                    delivered.set(true);
                                    emitter.complete(channel);
                                }
                                case TRANSIENT_FAILURE, SHUTDOWN -> emitter.fail(
                                        new CsiSocketException(socket, diagnose(socket), null));
                                default -> channel.notifyWhenStateChanged(state, this);
                            }
                        }
                    }.run();
                })
                .ifNoItem().after(connectTimeout)
                .failWith(() -> new CsiSocketException(socket,
                        "not connected within " + connectTimeout.toMillis() + " ms; " + diagnose(socket), null));
    }

    /** Shuts a channel down, waiting a little for calls in flight. */
    public static void close(ManagedChannel channel) {
        channel.shutdown();
        try {
            if (!channel.awaitTermination(2, TimeUnit.SECONDS)) {
                channel.shutdownNow();
            }
        } catch (InterruptedException e) {
            channel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    /** A hint at why a socket cannot be opened, from what is at its path. */
    static String diagnose(Path socket) {
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(socket, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            return Files.isDirectory(socket.getParent() == null ? socket : socket.getParent())
                    ? "no such file" : "no such file or directory: " + socket.getParent();
        }
        if (attributes.isSymbolicLink()) {
            return Files.exists(socket) ? "a symbolic link to something that does not accept connections"
                    : "a dangling symbolic link";
        }
        if (attributes.isDirectory()) {
            return "a directory, not a socket";
        }
        if (attributes.isRegularFile()) {
            return "a regular file, not a socket";
        }
        if (!Files.isWritable(socket)) {
            return "permission denied";
        }
        return "connection refused: nothing listens on the socket";
    }
}
