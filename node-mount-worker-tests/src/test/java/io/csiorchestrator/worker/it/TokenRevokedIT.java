package io.csiorchestrator.worker.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaBroker;
import io.csiorchestrator.worker.kafka.CommandConsumer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A node's delegation token revoked while its worker runs (the packaged worker, fencing off: only its own Kafka clients
 * matter here) on a closed broker that asks every connection to re-authenticate every 2 s: the worker logs in with the
 * token file ({@code csi.kafka.token-file}), is ready, and once the token is revoked it is not ready, its {@code kafka}
 * readiness check saying the broker refused its credential (not that the broker cannot be reached). (A new token needs a restart of the worker: the file is read at
 * start; a renewal keeps the token and needs nothing.)
 */
class TokenRevokedIT {

    static final String NODE = "token-node";
    static final Duration AWAIT = Duration.ofSeconds(90);
    static final HttpClient HTTP = HttpClient.newHttpClient();
    static Path root;
    static KafkaBroker broker;
    static Process worker;

    @BeforeAll
    static void setUp() throws Exception {
        root = Files.createTempDirectory("csi-token-revoked-it").toRealPath();
        Files.createDirectories(root.resolve("plugins"));
        broker = KafkaBroker.builder().secured(true).reauthentication(Duration.ofSeconds(2))
                .tokenExpiryCheck(Duration.ofSeconds(1)).start();
        broker.createTopic("node-commands", 4);
        broker.createContractTopics("");
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (worker != null) {
            worker.destroyForcibly();
            worker.waitFor(10, TimeUnit.SECONDS);
        }
        if (broker != null) {
            broker.close();
        }
        try (Stream<Path> files = Files.walk(root)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private static Process startWorker(Path tokenFile) throws IOException {
        Path jar = Path.of(System.getProperty("csi.worker.jar", "../node-mount-worker/target/quarkus-app/quarkus-run.jar"));
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-Dcsi.worker.node-id=" + NODE,
                "-Dcsi.worker.root=" + root.resolve("worker"),
                "-Dcsi.worker.plugins-dir=" + root.resolve("plugins"),
                "-Dcsi.worker.fencing.enabled=false",
                "-Dkafka.bootstrap.servers=" + broker.bootstrapServers(),
                "-D" + KafkaClientSecurity.PROTOCOL + "=SASL_SSL",
                "-D" + KafkaClientSecurity.TOKEN_FILE + "=" + tokenFile,
                "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + broker.truststore(),
                "-Dquarkus.http.port=0",
                "-jar", jar.toAbsolutePath().toString());
        return new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(root.resolve("worker.log").toFile())).start();
    }

    /** The worker's HTTP port, from its "Listening on" log line (it runs on port 0). */
    private static int port() throws IOException {
        Matcher m = Pattern.compile("Listening on: http://[^:/]+:(\\d+)").matcher(Files.readString(root.resolve("worker.log")));
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    private static HttpResponse<String> ready() throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port() + "/q/health/ready"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aWorkerWhoseTokenIsRevokedWhileItRunsIsNotReadyAndSaysItsCredentialWasRefused() throws Exception {
        KafkaAccess.Principal node = KafkaAccess.Principal.node(NODE);
        broker.issueToken(node, TopicCatalog.unprefixed(), Duration.ofHours(1));
        Path tokenFile = broker.dataDir().resolve("credentials").resolve(node.name() + ".token");
        assertTrue(Files.isRegularFile(tokenFile), tokenFile.toString());
        worker = startWorker(tokenFile);
        await().atMost(AWAIT).until(() -> port() > 0 && ready().statusCode() == 200);

        assertTrue(broker.revokeTokens(node.name()) > 0);
        await().atMost(AWAIT).until(() -> ready().statusCode() == 503);
        String body = ready().body().replaceAll("\\s+", " ");
        // the kafka check says the credential was refused, not that the broker cannot be reached
        assertTrue(body.contains("\"name\": \"kafka\", \"status\": \"DOWN\""), body);
        assertTrue(body.contains("\"consumer\": \"the broker refused this node's Kafka credential (revoked or expired?")
                && body.contains("SaslAuthenticationException"), body);
        // and it keeps saying so at every look (each second) for the loss limit and two contact checks more: the
        // connections made before the revocation still answer fetches, which must not make it ready again, nor may
        // the silence that follows turn it into "cannot reach the broker"
        Duration window = CommandConsumer.CONTACT_LOST_AFTER.plus(CommandConsumer.CHECK_EVERY.multipliedBy(2));
        long until = System.nanoTime() + window.toNanos();
        await().atMost(window.plus(AWAIT)).pollInterval(Duration.ofSeconds(1)).until(() -> {
            HttpResponse<String> now = ready();
            String text = now.body().replaceAll("\\s+", " ");
            assertTrue(now.statusCode() == 503 && text.contains("the broker refused this node's Kafka credential"),
                    "still not ready, for the refused credential: " + now.statusCode() + " " + text);
            return System.nanoTime() - until > 0;
        });
    }
}
