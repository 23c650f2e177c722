package io.csiorchestrator.localinfra;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;

/**
 * The local Kafka process of {@code ./csi up} and {@code ./csi demo}: one KRaft node (broker and controller) with
 * its log in {@code <dir>/log}.
 *
 * <p>{@code java ... io.csiorchestrator.localinfra.KafkaMain <dir> [--ephemeral]}. The ports and the cluster id
 * are chosen on the first start and kept in {@code <dir>/ports.properties}, so a restart (after a SIGTERM or a
 * {@code kill -9}) serves the same log on the same address: topics, records and committed offsets are kept.
 * The log is written like any Kafka broker's (to the page cache, flushed by the OS; Kafka's defaults): a killed
 * process loses nothing, a power cut may lose the last seconds. {@code --ephemeral}: the directory is deleted on
 * a clean stop (the demo). Writes {@code <dir>/ready.properties} ({@code bootstrap.servers}) once the broker
 * answers, and {@value #CERT_BOOTSTRAP}, the client-certificate listener's address; SIGTERM stops it cleanly.
 *
 * <p>Closed by default ({@link BrokerSecurity}): SASL_SSL with SCRAM-SHA-512, the StandardAuthorizer, no access
 * without an ACL; the CA certificate, the broker's key and the {@code csi-admin} password are made on the first
 * start in {@code <dir>/security} (0600) and kept. A log made by an open broker of an earlier version is refused.
 *
 * <p>{@code --listener NAME=ADDRESS} (repeatable): one more SASL_SSL listener bound to and advertised at
 * {@code ADDRESS} on a free port kept like the others ({@code listener.NAME.port}); its {@code host:port} is in
 * {@code ready.properties} as {@code listener.NAME}. {@code ./csi chaos} uses it for a node in a network namespace
 * of its own ({@link NetNamespace}): the address is the host end of its veth, the only way in from there.
 */
public final class KafkaMain {

    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(120);
    /** The broker's key material and the admin's credential ({@link BrokerSecurity}), under the state directory. */
    public static final String SECURITY_DIR = "security";
    /** In {@code ready.properties}: {@code host:port} of the client-certificate listener (SSL, mutual TLS). */
    public static final String CERT_BOOTSTRAP = "certificate.bootstrap.servers";

    private KafkaMain() {
    }

    public static void main(String[] argv) throws Exception {
        StateDir.Args args = StateDir.Args.parse(argv, "KafkaMain <dir> [--ephemeral] [--listener NAME=ADDRESS]...");
        StateDir state = new StateDir(args.dir());
        state.clearReady();
        QuietLogging.kafka();
        Properties kept = state.ports();
        if (kept.isEmpty()) {
            int[] ports = Kraft.freePorts(2);
            kept.setProperty("broker.port", String.valueOf(ports[0]));
            kept.setProperty("controller.port", String.valueOf(ports[1]));
            kept.setProperty("cluster.id", Uuid.randomUuid().toString());
            state.writePorts(kept);
        }
        java.util.Map<String, String> extra = new java.util.LinkedHashMap<>();
        for (String listener : args.all("listener")) {
            String[] parts = listener.split("=", 2);
            if (parts.length != 2 || !parts[0].matches("[A-Z][A-Z0-9_]*") || parts[0].equals("PLAINTEXT")
                    || parts[0].equals("CONTROLLER")) {
                throw new IllegalArgumentException("--listener NAME=ADDRESS (NAME upper case, not PLAINTEXT or "
                        + "CONTROLLER): " + listener);
            }
            String key = "listener." + parts[0] + ".port";
            if (kept.getProperty(key) == null) {
                kept.setProperty(key, String.valueOf(Kraft.freePorts(1)[0]));
                state.writePorts(kept);
            }
            extra.put(parts[0], parts[1] + ":" + kept.getProperty(key));
        }
        if (kept.getProperty("cert.port") == null) {
            // a state directory from before the client-certificate listener: one more port, kept like the others
            kept.setProperty("cert.port", String.valueOf(Kraft.freePorts(1)[0]));
            state.writePorts(kept);
        }
        int certPort = Integer.parseInt(kept.getProperty("cert.port"));
        int brokerPort = Integer.parseInt(kept.getProperty("broker.port"));
        int controllerPort = Integer.parseInt(kept.getProperty("controller.port"));
        Path logDir = state.path().resolve("log");
        Path securityDir = state.path().resolve(SECURITY_DIR);
        if (Files.exists(logDir.resolve("meta.properties")) && !Files.exists(securityDir.resolve(BrokerSecurity.CA_FILE))) {
            throw new IllegalStateException("the Kafka log in " + logDir + " was made by an open (PLAINTEXT) broker, "
                    + "which had no credentials: start afresh (./csi up --fresh)");
        }
        List<String> names = new ArrayList<>(BrokerSecurity.LOOPBACK_NAMES);
        for (String address : extra.values()) {
            names.add(address.substring(0, address.lastIndexOf(':')));
        }
        BrokerSecurity security = BrokerSecurity.createOrLoad(securityDir, names, BrokerSecurity.DEFAULT_REAUTHENTICATION);
        Properties props = Kraft.brokerProperties(logDir, brokerPort, controllerPort);
        // A long-running broker (./csi up, demo, chaos): its heartbeat to its own controller at Kafka's default, 2 s,
        // instead of the 500 ms that makes the throw-away test brokers start faster (issue 36: two controller events a
        // second while idle). The broker is fenced after broker.session.timeout.ms (9 s) without one, as by default.
        props.put("broker.heartbeat.interval.ms", "2000");
        // While nothing changes the active controller appends a no-op record to the metadata log (and syncs it to
        // disk) every metadata.max.idle.interval.ms, by default 500 ms (KIP-835: it lets observers measure how far
        // behind the metadata they are). With one broker that is also its own controller nobody lags; 5 s, so an idle
        // broker writes one record each 5 s instead of two a second (issue 36: the raft-io thread was its
        // second-busiest while idle).
        props.put("metadata.max.idle.interval.ms", "5000");
        security.configure(props, "127.0.0.1", brokerPort, controllerPort, certPort);
        for (java.util.Map.Entry<String, String> listener : extra.entrySet()) {
            security.addListener(props, listener.getKey(), listener.getValue(), listener.getValue());
        }
        Path propsFile = state.path().resolve("server.properties");
        BrokerSecurity.writeOwnerOnly(propsFile, ""); // it holds the key store's and the broker's passwords
        try (OutputStream out = Files.newOutputStream(propsFile)) {
            props.store(out, "csi-orchestrator local Kafka (KafkaMain)");
        }
        KafkaConfig config = new KafkaConfig(props, false);
        Kraft.format(kept.getProperty("cluster.id"), propsFile, security.formatArguments());
        KafkaRaftServer server = new KafkaRaftServer(config, Time.SYSTEM);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("kafka: stopping");
            try {
                state.clearReady();
                server.shutdown();
                server.awaitShutdown();
            } finally {
                if (args.ephemeral()) {
                    Kraft.deleteRecursively(state.path());
                }
                stopped.countDown();
            }
        }, "csi-kafka-stop"));
        server.startup();
        String bootstrap = "127.0.0.1:" + brokerPort;
        Kraft.awaitReady(bootstrap, security.admin(), STARTUP_TIMEOUT);
        Properties ready = new Properties();
        ready.setProperty("bootstrap.servers", bootstrap);
        ready.setProperty(CERT_BOOTSTRAP, "127.0.0.1:" + certPort);
        extra.forEach((name, address) -> ready.setProperty("listener." + name, address));
        ready.setProperty("pid", String.valueOf(ProcessHandle.current().pid()));
        state.writeReady(ready);
        System.out.println("kafka: serving at " + bootstrap + ", log in " + logDir
                + (args.ephemeral() ? " (ephemeral)" : ""));
        stopped.await();
    }
}
