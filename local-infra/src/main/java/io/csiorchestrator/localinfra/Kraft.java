package io.csiorchestrator.localinfra;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

import io.csiorchestrator.events.KafkaClientSecurity;

import kafka.tools.StorageTool;

/**
 * One KRaft node in combined mode (broker and controller, node id 1) on loopback: its settings, storage
 * formatting, readiness and topic creation. Used by {@link KafkaMain} (the local broker process of
 * {@code ./csi up}) and by testkit's in-process {@code KafkaBroker}.
 */
public final class Kraft {

    private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

    private Kraft() {
    }

    /** The node's settings: PLAINTEXT on {@code brokerPort}, CONTROLLER on {@code controllerPort}, log in {@code logDir}. */
    public static Properties brokerProperties(Path logDir, int brokerPort, int controllerPort) {
        Properties p = new Properties();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("log.dirs", logDir.toAbsolutePath().toString());

        // One node: every internal topic has one replica, few partitions.
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "1");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("default.replication.factor", "1");
        p.put("min.insync.replicas", "1");
        p.put("num.partitions", "1");
        p.put("auto.create.topics.enable", "true");
        p.put("group.share.enable", "false");

        // Fast start-up and rebalances.
        p.put("group.initial.rebalance.delay.ms", "0");
        p.put("broker.heartbeat.interval.ms", "500");
        p.put("controller.quorum.election.timeout.ms", "1000");

        // Small footprint: few threads, small buffers (the cleaner's 128 MiB default buffer is wasted here).
        p.put("num.network.threads", "2");
        p.put("num.io.threads", "2");
        p.put("background.threads", "2");
        p.put("num.recovery.threads.per.data.dir", "1");
        p.put("log.cleaner.threads", "1");
        p.put("log.cleaner.dedupe.buffer.size", String.valueOf(2 * 1024 * 1024));
        p.put("log.index.size.max.bytes", String.valueOf(1024 * 1024));
        return p;
    }

    /** Formats the node's storage for {@code clusterId}; a log directory formatted before is left as it is. */
    public static void format(String clusterId, Path propsFile) {
        format(clusterId, propsFile, List.of());
    }

    /**
     * As {@link #format(String, Path)}, with {@code extra} arguments of the storage tool (e.g. {@code --add-scram}
     * credentials, which only a first format writes).
     */
    public static void format(String clusterId, Path propsFile, List<String> extra) {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        int rc;
        List<String> command = new ArrayList<>(List.of(
            "format", "--cluster-id", clusterId, "--config", propsFile.toString(), "--ignore-formatted"));
        command.addAll(extra);
        try (PrintStream out = new PrintStream(captured, true, StandardCharsets.UTF_8)) {
            // StorageTool.execute, never main(): main() exits the JVM.
            rc = StorageTool.execute(command.toArray(new String[0]), out);
        } catch (Exception e) {
            throw new IllegalStateException("Formatting Kafka storage failed: " + captured.toString(StandardCharsets.UTF_8), e);
        }
        if (rc != 0) {
            throw new IllegalStateException("Formatting Kafka storage failed (exit " + rc + "): "
                + captured.toString(StandardCharsets.UTF_8));
        }
    }

    /** A new Admin client; the caller closes it. */
    public static Admin admin(String bootstrapServers) {
        return admin(bootstrapServers, KafkaClientSecurity.plaintext());
    }

    /** A new Admin client with {@code security}'s settings; the caller closes it. */
    public static Admin admin(String bootstrapServers, KafkaClientSecurity security) {
        Properties props = security.applyTo(new Properties());
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "csi-local-infra-admin");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(props);
    }

    /** Waits (bounded) until the broker at {@code bootstrapServers} answers with at least one node. */
    public static void awaitReady(String bootstrapServers, Duration timeout) {
        awaitReady(bootstrapServers, KafkaClientSecurity.plaintext(), timeout);
    }

    /** As {@link #awaitReady(String, Duration)}, connecting with {@code security}. */
    public static void awaitReady(String bootstrapServers, KafkaClientSecurity security, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        try (Admin admin = admin(bootstrapServers, security)) {
            while (System.nanoTime() < deadline) {
                try {
                    int nodes = admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).size();
                    if (nodes > 0) {
                        return;
                    }
                } catch (ExecutionException | TimeoutException e) {
                    last = e;
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("Interrupted while waiting for the Kafka broker", e);
                }
            }
        }
        throw new IllegalStateException("Kafka broker at " + bootstrapServers + " not ready within " + timeout, last);
    }

    /**
     * Creates a topic (replication factor 1) and waits until the broker knows it.
     *
     * @return {@code true} if created, {@code false} if a topic of that name already existed (left as it is)
     */
    public static boolean createTopic(String bootstrapServers, String name, int partitions, Map<String, String> configs) {
        return createTopic(bootstrapServers, KafkaClientSecurity.plaintext(), name, partitions, configs);
    }

    /** As {@link #createTopic(String, String, int, Map)}, connecting with {@code security}. */
    public static boolean createTopic(String bootstrapServers, KafkaClientSecurity security, String name, int partitions,
                                      Map<String, String> configs) {
        Objects.requireNonNull(name, "name");
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1: " + partitions);
        }
        try (Admin admin = admin(bootstrapServers, security)) {
            return createTopic(admin, name, partitions, configs);
        }
    }

    /**
     * As {@link #createTopic(String, String, int, Map)}, through {@code admin} (the caller's, left open): one Admin for
     * many topics connects once (on a closed broker a TLS handshake and a SCRAM exchange) instead of once a topic.
     */
    public static boolean createTopic(Admin admin, String name, int partitions, Map<String, String> configs) {
        Objects.requireNonNull(name, "name");
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1: " + partitions);
        }
        NewTopic topic = new NewTopic(name, partitions, (short) 1).configs(configs == null ? Map.of() : configs);
        try {
            try {
                admin.createTopics(List.of(topic)).all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TopicExistsException) {
                    return false;
                }
                throw new IllegalStateException("Could not create topic " + name + ": " + e.getCause(), e.getCause());
            }
            awaitTopicVisible(admin, name);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while creating topic " + name, e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("Timed out creating topic " + name, e);
        }
    }

    private static void awaitTopicVisible(Admin admin, String name) throws InterruptedException {
        awaitTopicsVisible(admin, List.of(name));
    }

    private static void awaitTopicsVisible(Admin admin, List<String> names) throws InterruptedException {
        long deadline = System.nanoTime() + ADMIN_TIMEOUT.toNanos();
        while (true) {
            try {
                admin.describeTopics(names).allTopicNames().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                return;
            } catch (ExecutionException | TimeoutException e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("Topics " + names + " not visible after creation", e);
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
        }
    }

    /**
     * As {@link #createTopic(Admin, String, int, Map)} for several topics in one request (a topic that exists already
     * is left as it is), then waits until every topic it created is visible; returns the names it created. One round
     * trip to the controller instead of two a topic: a system's start creates some twenty topics.
     */
    public static List<String> createTopics(Admin admin, List<NewTopic> topics) {
        List<String> created = new ArrayList<>();
        try {
            Map<String, org.apache.kafka.common.KafkaFuture<Void>> results = admin.createTopics(topics).values();
            for (NewTopic topic : topics) {
                try {
                    results.get(topic.name()).get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                    created.add(topic.name());
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw new IllegalStateException("Could not create topic " + topic.name() + ": " + e.getCause(),
                                e.getCause());
                    }
                }
            }
            if (!created.isEmpty()) {
                awaitTopicsVisible(admin, created);
            }
            return created;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while creating topics", e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("Timed out creating topics", e);
        }
    }

    /** Ports that were free on loopback a moment ago (held together, so they're distinct). */
    public static int[] freePorts(int count) {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                socket.setReuseAddress(true);
                sockets.add(socket);
                ports[i] = socket.getLocalPort();
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find free ports", e);
        } finally {
            for (ServerSocket socket : sockets) {
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        }
    }

    /** Deletes a directory tree, best effort. */
    public static void deleteRecursively(Path root) {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            paths.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException ignored) {
                    // best effort
                }
            });
        } catch (IOException | UncheckedIOException ignored) {
            // best effort
        }
    }
}
