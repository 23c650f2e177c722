package io.csiorchestrator.localinfra;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
 * answers; SIGTERM stops it cleanly.
 */
public final class KafkaMain {

    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(120);

    private KafkaMain() {
    }

    public static void main(String[] argv) throws Exception {
        StateDir.Args args = StateDir.Args.parse(argv, "KafkaMain <dir> [--ephemeral]");
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
        int brokerPort = Integer.parseInt(kept.getProperty("broker.port"));
        int controllerPort = Integer.parseInt(kept.getProperty("controller.port"));
        Path logDir = state.path().resolve("log");
        Properties props = Kraft.brokerProperties(logDir, brokerPort, controllerPort);
        Path propsFile = state.path().resolve("server.properties");
        try (OutputStream out = Files.newOutputStream(propsFile)) {
            props.store(out, "csi-orchestrator local Kafka (KafkaMain)");
        }
        KafkaConfig config = new KafkaConfig(props, false);
        Kraft.format(kept.getProperty("cluster.id"), propsFile);
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
        Kraft.awaitReady(bootstrap, STARTUP_TIMEOUT);
        Properties ready = new Properties();
        ready.setProperty("bootstrap.servers", bootstrap);
        ready.setProperty("pid", String.valueOf(ProcessHandle.current().pid()));
        state.writeReady(ready);
        System.out.println("kafka: serving at " + bootstrap + ", log in " + logDir
                + (args.ephemeral() ? " (ephemeral)" : ""));
        stopped.await();
    }
}
