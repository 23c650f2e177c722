package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.localinfra.NetNamespace;
import io.csiorchestrator.localinfra.NetNamespace.Direction;

/**
 * The partition harness ({@link NetNamespace}, issue 19) with real namespaces, a real veth pair and real packets:
 * a process inside the namespace reaches a TCP server and a UDP socket of this JVM bound to the host end's
 * address; each cut stops exactly its direction; heal restores both; close and the stale clean-up leave no
 * namespace or interface behind. Needs root (as the node-mount-worker tests do).
 */
class NetNamespaceTest {

    private NetNamespace ns;
    private ServerSocket tcp;
    private DatagramSocket udp;

    @BeforeEach
    void setUp() throws IOException {
        ns = NetNamespace.create();
        InetAddress host = InetAddress.getByName(ns.hostAddress());
        tcp = new ServerSocket(0, 50, host);
        Thread acceptor = new Thread(() -> {
            while (!tcp.isClosed()) {
                try (Socket ignored = tcp.accept()) {
                    // accepted: the handshake went both ways
                } catch (IOException closed) {
                    return;
                }
            }
        }, "netns-test-accept");
        acceptor.setDaemon(true);
        acceptor.start();
        udp = new DatagramSocket(new InetSocketAddress(host, 0));
        udp.setSoTimeout(1500);
    }

    @AfterEach
    void tearDown() {
        try {
            tcp.close();
            udp.close();
        } catch (IOException ignored) {
            // closing
        }
        ns.close();
    }

    /** Open: a TCP connect from inside to the host end works, and a datagram from inside arrives. */
    @Test
    void openNamespaceReachesTheHostEndBothWays() throws Exception {
        assertTrue(tcpConnectFromInside(), "TCP connect from " + ns + " to the host end");
        assertTrue(datagramFromInsideArrives(), "UDP from inside arrives");
        assertTrue(Files.exists(Path.of("/run/netns", ns.name())));
    }

    /** Cut both ways: no TCP handshake, no datagram out; after heal both work again. */
    @Test
    void cutBothStopsEverythingAndHealRestoresIt() throws Exception {
        ns.cut(Direction.BOTH);
        assertFalse(tcpConnectFromInside(), "TCP connect must fail while cut both ways");
        assertFalse(datagramFromInsideArrives(), "no datagram out while cut both ways");
        ns.heal();
        assertNull(ns.cutDirection());
        assertTrue(tcpConnectFromInside(), "TCP connect after heal");
        assertTrue(datagramFromInsideArrives(), "UDP after heal");
    }

    /**
     * Cut in only: the node's datagrams still arrive (out is open) but its TCP connect fails because the host's
     * SYN-ACK never gets in.
     */
    @Test
    void cutInDropsOnlyPacketsToTheNode() throws Exception {
        ns.cut(Direction.IN);
        assertTrue(datagramFromInsideArrives(), "out is open while cut in: the datagram arrives");
        assertFalse(tcpConnectFromInside(), "the handshake's answer must not get in");
        ns.heal();
        assertTrue(tcpConnectFromInside(), "TCP connect after heal");
    }

    /** Cut out only: nothing the node sends arrives (no datagram, no handshake). */
    @Test
    void cutOutDropsOnlyPacketsFromTheNode() throws Exception {
        ns.cut(Direction.OUT);
        assertFalse(datagramFromInsideArrives(), "no datagram out while cut out");
        assertFalse(tcpConnectFromInside(), "no handshake while cut out");
        ns.heal();
        assertTrue(datagramFromInsideArrives(), "UDP after heal");
    }

    /** Close deletes the namespace and both veth ends; a second close is harmless. */
    @Test
    void closeRemovesTheNamespaceAndTheVethPair() throws Exception {
        String name = ns.name();
        List<String> ifaces = ns.interfaces();
        ns.close();
        ns.close();
        assertFalse(Files.exists(Path.of("/run/netns", name)), "namespace " + name + " left");
        String links = exec("ip", "-o", "link", "show");
        assertFalse(links.contains(ifaces.get(0)), "host end " + ifaces.get(0) + " left: " + links);
    }

    /**
     * A namespace named for a pid that is gone (a run killed with SIGKILL) is removed by the next create; this
     * JVM's own namespace (live pid) is kept.
     */
    @Test
    void staleNamespacesOfDeadProcessesAreRemovedLiveOnesKept() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        String stale = NetNamespace.PREFIX + Long.toString(gone.pid(), 36) + "x1";
        exec("ip", "netns", "add", stale);
        exec("ip", "link", "add", stale + "h", "type", "veth", "peer", "name", stale + "n");
        List<String> removed = NetNamespace.removeStale();
        assertTrue(removed.contains(stale), "removed " + removed);
        assertFalse(removed.contains(ns.name()), "a live run's namespace must be kept: " + removed);
        assertFalse(Files.exists(Path.of("/run/netns", stale)));
        assertFalse(exec("ip", "-o", "link", "show").contains(stale + "h"));
        assertTrue(Files.exists(Path.of("/run/netns", ns.name())));
    }

    private boolean tcpConnectFromInside() throws Exception {
        // bash's /dev/tcp: a real connect() inside the namespace, bounded by timeout(1)
        Process p = new ProcessBuilder(ns.command(List.of("timeout", "3", "bash", "-c",
                "exec 3<>/dev/tcp/" + ns.hostAddress() + "/" + tcp.getLocalPort()))).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        return p.exitValue() == 0;
    }

    private boolean datagramFromInsideArrives() throws Exception {
        String marker = "hello-" + System.nanoTime();
        Process p = new ProcessBuilder(ns.command(List.of("bash", "-c", "for i in 1 2 3 4 5; do echo " + marker
                + " > /dev/udp/" + ns.hostAddress() + "/" + udp.getLocalPort() + "; done"))).redirectErrorStream(true)
                .start();
        p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        byte[] buf = new byte[256];
        while (true) {
            DatagramPacket packet = new DatagramPacket(buf, buf.length);
            try {
                udp.receive(packet);
            } catch (SocketTimeoutException none) {
                return false;
            }
            if (new String(buf, 0, packet.getLength(), StandardCharsets.UTF_8).contains(marker)) {
                return true;
            }
        }
    }

    private static String exec(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), String.join(" ", command) + ": " + out);
        return out;
    }
}
