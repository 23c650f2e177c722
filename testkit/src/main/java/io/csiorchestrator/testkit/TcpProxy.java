package io.csiorchestrator.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A loopback TCP forwarder in front of a server, to take the server away from a client and give it
 * back: {@link #cut()} closes every forwarded connection and closes each new one as soon as it is
 * accepted (what a client sees of a server that crashed or fails over); {@link #restore()} forwards
 * again. One thread accepts, two threads pump each connection.
 */
public final class TcpProxy implements AutoCloseable {

    private final ServerSocket server;
    private volatile String targetHost;
    private volatile int targetPort;
    private final List<Socket> open = new ArrayList<>();
    private volatile boolean cut;

    private TcpProxy(String targetHost, int targetPort) throws IOException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    }

    /** Starts forwarding an ephemeral loopback port to {@code targetHost:targetPort}. */
    public static TcpProxy start(String targetHost, int targetPort) {
        try {
            TcpProxy proxy = new TcpProxy(targetHost, targetPort);
            Thread accept = new Thread(proxy::acceptLoop, "tcp-proxy-" + proxy.port());
            accept.setDaemon(true);
            accept.start();
            return proxy;
        } catch (IOException e) {
            throw new IllegalStateException("could not open a proxy port for " + targetHost + ":" + targetPort, e);
        }
    }

    /**
     * Opens an ephemeral loopback port that closes every connection (it starts cut) until
     * {@link #forwardTo(String, int)}: for a server that must know the proxy's address before it starts (a
     * Kafka listener advertised as the proxy, {@code KafkaBroker.Builder.advertisedListener}).
     */
    public static TcpProxy reserve() {
        TcpProxy proxy = start("127.0.0.1", 0);
        proxy.cut();
        return proxy;
    }

    /** Forwards new connections to {@code targetHost:targetPort} from now on (and restores a cut proxy). */
    public void forwardTo(String targetHost, int targetPort) {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        restore();
    }

    /** The loopback port clients connect to. */
    public int port() {
        return server.getLocalPort();
    }

    /** Closes every forwarded connection; new ones are closed as soon as they are accepted, until {@link #restore()}. */
    public void cut() {
        cut = true;
        closeOpen();
    }

    /** Forwards new connections again. */
    public void restore() {
        cut = false;
    }

    public boolean isCut() {
        return cut;
    }

    @Override
    public void close() {
        cut = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing
        }
        closeOpen();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            Socket in;
            try {
                in = server.accept();
            } catch (IOException e) {
                return;
            }
            if (cut) {
                closeQuietly(in);
                continue;
            }
            try {
                Socket out = new Socket(targetHost, targetPort);
                synchronized (open) {
                    open.add(in);
                    open.add(out);
                }
                pump(in, out);
                pump(out, in);
            } catch (IOException e) {
                closeQuietly(in);
            }
        }
    }

    private static void pump(Socket from, Socket to) throws IOException {
        InputStream input = from.getInputStream();
        OutputStream output = to.getOutputStream();
        Thread t = new Thread(() -> {
            try {
                input.transferTo(output);
            } catch (IOException e) {
                // the connection was closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "tcp-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private void closeOpen() {
        List<Socket> sockets;
        synchronized (open) {
            sockets = new ArrayList<>(open);
            open.clear();
        }
        sockets.forEach(TcpProxy::closeQuietly);
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }
}
