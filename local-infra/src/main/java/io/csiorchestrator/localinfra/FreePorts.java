package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Ports for a process to listen on later, picked now: below the kernel's ephemeral range, from this process's band
 * ({@value #PROPERTY}), never twice in one process. {@code ./csi up --free-ports} takes its services' ports here, and
 * so do the tests that start services as processes (the build runs several such modules at once, each in a band of
 * its own).
 */
public final class FreePorts {

    private static final Pattern BAND = Pattern.compile("\\s*(\\d+)\\s*-\\s*(\\d+)\\s*");

    private FreePorts() {
    }

    /**
     * System property {@code csi.free-ports=<low>-<high>}: {@link #take()} takes ports from that band only. Processes
     * that start services at the same time (the build's IT modules run side by side) each get a band of their own, since a port one of them picked is not bound until its service starts and the other could pick it
     * meanwhile; the band is clipped to the default range below.
     */
    public static final String PROPERTY = "csi.free-ports";

    /**
     * The band {@code {low, high}} that {@code property} ({@code <low>-<high>}) names within {@code [lowest, highest]};
     * the whole of it when {@code property} is null. A malformed band or one outside that range fails naming it.
     */
    public static int[] band(String property, int lowest, int highest) {
        if (property == null || property.isBlank()) {
            return new int[] {lowest, highest};
        }
        Matcher m = BAND.matcher(property);
        if (!m.matches()) {
            throw new IllegalArgumentException(PROPERTY + "=" + property + ": expected <low>-<high>, e.g. 20000-26000");
        }
        int low = Math.max(lowest, Integer.parseInt(m.group(1)));
        int high = Math.min(highest, Integer.parseInt(m.group(2)));
        if (high - low < 100) {
            throw new IllegalArgumentException(PROPERTY + "=" + property + ": fewer than 100 ports left within "
                    + lowest + "-" + highest + " (below the kernel's ephemeral range)");
        }
        return new int[] {low, high};
    }

    /** Ports this process handed out already (never twice). */
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();
    private static final int LOWEST_PORT = 20000;

    /**
     * A port free now for a service to listen on later, below the kernel's ephemeral range
     * ({@code /proc/sys/net/ipv4/ip_local_port_range}): a port the kernel picked (port 0) is in that range, and the
     * system's own outgoing connections (dozens of Kafka and PostgreSQL clients) take ports from it meanwhile; one
     * took a worker's port before the worker bound it ("Port ... seems to be in use", seen in CI). Never the same port
     * twice in one process; the kernel's choice as the last resort.
     */
    public static int take() {
        int[] band = band(System.getProperty(PROPERTY), LOWEST_PORT, ephemeralLow() - 1);
        int low = band[0];
        int high = band[1];
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; high > low && attempt < 200; attempt++) {
            int port = random.nextInt(low, high + 1);
            if (!HANDED_OUT.contains(port) && free(port) && HANDED_OUT.add(port)) {
                return port;
            }
        }
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            HANDED_OUT.add(socket.getLocalPort());
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The first port of the kernel's ephemeral range (32768 when it cannot be read). */
    public static int ephemeralLow() {
        try {
            // a line read through a reader: Files.readString gave only "3" of "32768\t60999" from this /proc file
            String[] range = Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).get(0).trim()
                    .split("\\s+");
            return Integer.parseInt(range[0]);
        } catch (IOException | RuntimeException e) {
            return 32768;
        }
    }

    public static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket(port)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
