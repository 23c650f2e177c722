package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * A network namespace of its own for a node's processes, to cut them off from the rest of the machine and let
 * them back in (issue 19, fault tests): {@code ip netns add}, a veth pair (one end in the host namespace, one in
 * the new one) with a {@code /30} of {@code 10.213.0.0/16} that no interface of the machine uses yet, and loopback
 * up inside. Processes started with {@link #command(List)} run inside it and reach the host (e.g. a Kafka listener
 * bound to {@link #hostAddress()}) only through the veth.
 *
 * <p><b>Only the network namespace.</b> Commands are started with {@code nsenter --net=/run/netns/<name>}, not
 * {@code ip netns exec}: the latter also unshares the mount namespace (to remount {@code /sys}), so bind mounts made
 * by a worker started that way would not be seen by the host, the plugin or a test reading
 * {@code /proc/self/mountinfo}.
 *
 * <p><b>Cuts.</b> {@link #cut(Direction)} drops every packet on the namespace's end of the veth with an nftables
 * table of family {@code netdev} inside the namespace (hook {@code ingress}: packets to the node; hook
 * {@code egress}: packets from the node); {@link #heal()} deletes that table. It drops IPv4 and IPv6 packets and lets
 * ARP through, so that a one-way cut is one-way at the IP level (dropping ARP too would stop the other direction:
 * the node could not resolve the host end's address any more). The design asked for
 * {@code tc qdisc ... netem loss 100%}; this machine's kernel has no {@code sch_netem}
 * ({@code CONFIG_NET_SCH_NETEM} is not set), the netdev hooks drop the same packets at the same place (the device,
 * after the IP stack, so a sender sees no error, only silence) and need only nftables. Every rule lives in the
 * namespace this object made: nothing of the host's firewall is touched.
 *
 * <p><b>Clean-up.</b> {@link #close()} deletes the namespace and the host end of the pair (which removes both
 * ends); a JVM shutdown hook does the same if close was not called. Names carry the creating JVM's pid
 * ({@code csifx<pid36>x<n>}): {@link #removeStale()} (called by {@link #create()}) deletes those of processes that
 * are gone (a run killed with SIGKILL), never those of a JVM still running.
 */
public final class NetNamespace implements AutoCloseable {

    /** Prefix of every namespace and veth name this class makes. */
    public static final String PREFIX = "csifx";
    private static final String TABLE = "csi_fault";
    private static final AtomicInteger SEQUENCE = new AtomicInteger();
    private static final long TIMEOUT_SECONDS = 20;

    /** Which traffic a cut drops, seen from the node inside the namespace. */
    public enum Direction {
        /** Packets to the node (the host hears the node, the node hears nothing). */
        IN,
        /** Packets from the node (the node hears the host, nobody hears the node). */
        OUT,
        /** Both. */
        BOTH
    }

    private final String name;
    private final String hostEnd;
    private final String nodeEnd;
    private final String hostAddress;
    private final String nodeAddress;
    private final Thread shutdownHook;
    private volatile Direction cut;
    private volatile boolean closed;

    private NetNamespace(String name, String hostAddress, String nodeAddress) {
        this.name = name;
        this.hostEnd = name + "h";
        this.nodeEnd = name + "n";
        this.hostAddress = hostAddress;
        this.nodeAddress = nodeAddress;
        this.shutdownHook = new Thread(this::removeQuietly, "net-namespace-cleanup-" + name);
    }

    /**
     * Makes a namespace with a veth pair to the host and addresses on both ends, after removing the stale ones of
     * dead processes. Needs root, {@code ip}, {@code nft} and {@code nsenter}.
     */
    public static synchronized NetNamespace create() {
        removeStale();
        String tag = Long.toString(ProcessHandle.current().pid(), 36) + "x" + SEQUENCE.incrementAndGet();
        String name = PREFIX + tag;
        if (name.length() + 1 > 15) {
            throw new IllegalStateException("interface name " + name + "h is longer than 15 characters");
        }
        String[] subnet = freeSubnet();
        NetNamespace ns = new NetNamespace(name, subnet[0], subnet[1]);
        Runtime.getRuntime().addShutdownHook(ns.shutdownHook);
        try {
            run("ip", "netns", "add", name);
            run("ip", "link", "add", ns.hostEnd, "type", "veth", "peer", "name", ns.nodeEnd);
            run("ip", "link", "set", ns.nodeEnd, "netns", name);
            run("ip", "addr", "add", ns.hostAddress + "/30", "dev", ns.hostEnd);
            run("ip", "link", "set", ns.hostEnd, "up");
            ns.inside("ip", "addr", "add", ns.nodeAddress + "/30", "dev", ns.nodeEnd);
            ns.inside("ip", "link", "set", ns.nodeEnd, "up");
            ns.inside("ip", "link", "set", "lo", "up");
            return ns;
        } catch (RuntimeException e) {
            ns.close();
            throw e;
        }
    }

    /** The namespace's name ({@code ip netns list}). */
    public String name() {
        return name;
    }

    /** The host end's address: what processes inside the namespace connect to. */
    public String hostAddress() {
        return hostAddress;
    }

    /** The address of the namespace's end: where the host reaches a server inside. */
    public String nodeAddress() {
        return nodeAddress;
    }

    /** The interface names: host end, namespace end. */
    public List<String> interfaces() {
        return List.of(hostEnd, nodeEnd);
    }

    /** {@code command} prefixed so that it runs inside the namespace (network only; same mounts, pids, users). */
    public List<String> command(List<String> command) {
        List<String> full = new ArrayList<>(List.of("nsenter", "--net=/run/netns/" + name, "--"));
        full.addAll(command);
        return full;
    }

    /** Cuts the traffic of {@code direction} (replacing an earlier cut). */
    public synchronized void cut(Direction direction) {
        heal();
        inside("nft", "add", "table", "netdev", TABLE);
        if (direction == Direction.IN || direction == Direction.BOTH) {
            inside("nft", "add", "chain", "netdev", TABLE, "in", "{ type filter hook ingress device " + nodeEnd
                    + " priority 0; policy accept; }");
            inside("nft", "add", "rule", "netdev", TABLE, "in", "meta", "protocol", "{", "ip", ",", "ip6", "}", "drop");
        }
        if (direction == Direction.OUT || direction == Direction.BOTH) {
            inside("nft", "add", "chain", "netdev", TABLE, "out", "{ type filter hook egress device " + nodeEnd
                    + " priority 0; policy accept; }");
            inside("nft", "add", "rule", "netdev", TABLE, "out", "meta", "protocol", "{", "ip", ",", "ip6", "}", "drop");
        }
        cut = direction;
    }

    /** Lets all traffic through again (no-op when nothing is cut). */
    public synchronized void heal() {
        if (cut != null || tableExists()) {
            inside("nft", "delete", "table", "netdev", TABLE);
        }
        cut = null;
    }

    /** The current cut, or null. */
    public Direction cutDirection() {
        return cut;
    }

    private boolean tableExists() {
        return exec(command(List.of("nft", "list", "tables", "netdev"))).output().contains(TABLE);
    }

    /** Runs {@code command} inside the namespace and returns its output; fails on a non-zero exit. */
    public String inside(String... command) {
        return run(command(List.of(command)).toArray(String[]::new));
    }

    /** Deletes the namespace and the veth pair. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        removeQuietly();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running or about to
        }
    }

    private void removeQuietly() {
        remove(name);
    }

    private static void remove(String name) {
        exec(List.of("ip", "link", "del", name + "h"));
        exec(List.of("ip", "netns", "del", name));
    }

    /**
     * Deletes the namespaces (and host-side veth ends) named {@code csifx<pid36>x<n>} whose pid is not a live
     * process: what a run killed with SIGKILL left. Returns their names.
     */
    public static synchronized List<String> removeStale() {
        List<String> removed = new ArrayList<>();
        for (String name : existing()) {
            String tag = name.substring(PREFIX.length());
            int x = tag.lastIndexOf('x'); // base 36 has an x too; the sequence after it is decimal
            if (x <= 0) {
                continue;
            }
            long pid;
            try {
                pid = Long.parseLong(tag.substring(0, x), 36);
            } catch (NumberFormatException e) {
                continue;
            }
            if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                continue;
            }
            remove(name);
            removed.add(name);
        }
        return removed;
    }

    /** Names (namespaces and host-side veth ends without the trailing 'h') with this class's prefix. */
    static List<String> existing() {
        List<String> names = new ArrayList<>();
        Path dir = Path.of("/run/netns");
        if (Files.isDirectory(dir)) {
            try (Stream<Path> entries = Files.list(dir)) {
                entries.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(PREFIX)).forEach(names::add);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        for (String line : exec(List.of("ip", "-o", "link", "show")).output().split("\n")) {
            String[] parts = line.split(":\\s+");
            if (parts.length > 1) {
                String ifname = parts[1].split("@")[0];
                if (ifname.startsWith(PREFIX) && ifname.endsWith("h")) {
                    String ns = ifname.substring(0, ifname.length() - 1);
                    if (!names.contains(ns)) {
                        names.add(ns);
                    }
                }
            }
        }
        return names;
    }

    /** A /30 of 10.213.0.0/16 that no address of the machine is in: {host end, namespace end}. */
    private static String[] freeSubnet() {
        String used = exec(List.of("ip", "-4", "-o", "addr", "show")).output();
        for (int attempt = 0; attempt < 1000; attempt++) {
            int block = ThreadLocalRandom.current().nextInt(1, 16383);
            int base = block * 4;
            String prefix = "10.213." + (base / 256) + ".";
            String network = prefix + (base % 256);
            boolean taken = false;
            for (int i = 0; i < 4; i++) {
                if (used.contains(" " + prefix + (base % 256 + i) + "/")) {
                    taken = true;
                }
            }
            if (!taken) {
                return new String[] {prefix + (base % 256 + 1), prefix + (base % 256 + 2), network};
            }
        }
        throw new IllegalStateException("no free /30 in 10.213.0.0/16");
    }

    @Override
    public String toString() {
        return "netns " + name + " (" + hostEnd + " " + hostAddress + " <-> " + nodeEnd + " " + nodeAddress
                + (cut == null ? "" : ", cut " + cut.name().toLowerCase(Locale.ROOT)) + ")";
    }

    // ------------------------------------------------------------------ commands

    record Result(int exit, String output) {
    }

    private static String run(String... command) {
        Result result = exec(List.of(command));
        if (result.exit() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " exited " + result.exit() + ": "
                    + result.output().strip());
        }
        return result.output();
    }

    private static Result exec(List<String> command) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            byte[] out = process.getInputStream().readAllBytes();
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " did not end within "
                        + TIMEOUT_SECONDS + " s");
            }
            return new Result(process.exitValue(), new String(out, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + String.join(" ", command), e);
        }
    }
}
