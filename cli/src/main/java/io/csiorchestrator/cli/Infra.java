package io.csiorchestrator.cli;

import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.EmbeddedPostgresServer;
import io.csiorchestrator.testkit.KafkaBroker;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

/**
 * The hidden {@code csi infra <work-dir>} process: a KRaft Kafka broker with the contract's topics
 * (partitions and compaction from {@link Topic}) and an embedded PostgreSQL with one database per
 * service. Writes {@code <work-dir>/infra.properties} once both serve; stops both on SIGTERM.
 */
public final class Infra {

    public static final String FILE = "infra.properties";
    public static final String[] DATABASES = {"claims", "plugin_registry"};

    private Infra() {
    }

    public static int run(Path workDir, String topicPrefix) throws IOException, InterruptedException {
        KafkaBroker broker = KafkaBroker.builder().quietLogging(true).start();
        EmbeddedPostgresServer postgres;
        try {
            postgres = EmbeddedPostgresServer.start(true);
        } catch (RuntimeException e) {
            broker.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("infra: stopping");
            try {
                postgres.close();
            } finally {
                broker.close();
                stopped.countDown();
            }
        }, "csi-infra-stop"));
        TopicCatalog catalog = new TopicCatalog(topicPrefix);
        for (Map.Entry<String, Topic> entry : catalog.all().entrySet()) {
            Topic topic = entry.getValue();
            Map<String, String> configs = topic.compacted() ? Map.of("cleanup.policy", "compact") : Map.of();
            broker.createTopic(entry.getKey(), topic.defaultPartitions(), configs);
            broker.createTopic(catalog.deadLetterName(topic), 1, Map.of());
            System.out.println("infra: topic " + entry.getKey() + " partitions=" + topic.defaultPartitions()
                    + (topic.compacted() ? " cleanup.policy=compact" : ""));
        }
        for (String db : DATABASES) {
            postgres.createDatabase(db);
        }
        Properties props = new Properties();
        props.setProperty("kafka.bootstrap.servers", broker.bootstrapServers());
        props.setProperty("postgres.port", String.valueOf(postgres.port()));
        props.setProperty("postgres.username", postgres.username());
        for (String db : DATABASES) {
            props.setProperty("postgres." + db + ".jdbc", postgres.jdbcUrl(db));
            props.setProperty("postgres." + db + ".reactive", postgres.reactiveUrl(db));
        }
        Path tmp = workDir.resolve(FILE + ".tmp");
        try (Writer writer = Files.newBufferedWriter(tmp)) {
            props.store(writer, "written by csi infra once Kafka and PostgreSQL serve");
        }
        Files.move(tmp, workDir.resolve(FILE), StandardCopyOption.ATOMIC_MOVE);
        System.out.println("infra: kafka " + broker.bootstrapServers() + ", postgresql 127.0.0.1:" + postgres.port());
        stopped.await();
        return 0;
    }
}
