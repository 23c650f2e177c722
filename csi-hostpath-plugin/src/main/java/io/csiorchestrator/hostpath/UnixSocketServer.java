package io.csiorchestrator.hostpath;

import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A grpc-netty server on a unix domain socket, with Netty's epoll transport. */
final class UnixSocketServer {

    private final Path socketPath;
    private final Server server;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;

    private UnixSocketServer(Path socketPath, Server server, EventLoopGroup boss, EventLoopGroup workers) {
        this.socketPath = socketPath;
        this.server = server;
        this.boss = boss;
        this.workers = workers;
    }

    /**
     * Binds the socket and starts serving. A stale socket file left by an earlier run is removed;
     * any other file at the path is an error.
     */
    static UnixSocketServer start(Path socketPath, List<BindableService> services, CallInterceptor interceptor,
                                  CallThreads callThreads) throws IOException {
        Files.createDirectories(socketPath.toAbsolutePath().getParent());
        removeStaleSocket(socketPath);
        EventLoopGroup boss = new EpollEventLoopGroup(1);
        EventLoopGroup workers = new EpollEventLoopGroup(2);
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(socketPath.toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers)
                // calls run on the event loop thread unless callThreads hands them to its pool (CallThreads)
                .directExecutor()
                .callExecutor(callThreads);
        for (BindableService service : services) {
            builder.addService(ServerInterceptors.intercept(service, interceptor));
        }
        try {
            Server server = builder.build().start();
            return new UnixSocketServer(socketPath, server, boss, workers);
        } catch (IOException | RuntimeException e) {
            boss.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            throw e;
        }
    }

    /** Stops accepting calls, lets calls in flight finish for a moment, and removes the socket file. */
    void stop() {
        server.shutdown();
        try {
            if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
                server.shutdownNow();
                server.awaitTermination(2, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
        boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException ignored) {
            // a later start removes a stale socket anyway
        }
    }

    private static void removeStaleSocket(Path socketPath) throws IOException {
        if (!Files.exists(socketPath, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        BasicFileAttributes attributes = Files.readAttributes(socketPath, BasicFileAttributes.class,
                LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isOther()) {
            throw new IOException(socketPath + " exists and is not a socket; not removing it");
        }
        Files.delete(socketPath);
    }
}
