package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 33 item 5: a scheduler that is not ours (examples/python-scheduler: Debian's python3-confluent-kafka on
 * librdkafka 2.0.2 and python3-cryptography, written from events-schema/CONTRACT.md) against the shared one-node
 * system. {@code ./csi scheduler init} writes its kit (client certificate, signing key registered in the trust file,
 * claim-service's sealing key); the Python logs in with the certificate, claims a volume for write on node-1, sees it
 * ready (a mount point), releases it, sees it released; sends a record with a bad signature (never answered), one
 * replayed (answered once) and one outside the replay window (answered rejected, "outside window"); and
 * {@code ./csi scheduler check} names the bad signature and the replay.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(SharedSystem.Shared.class)
@Order(3)
class PythonSchedulerIT {

    private static final Duration START = Duration.ofSeconds(180);
    /** The whole Python run: a claim, a release and four small requests, each answered in seconds on a quiet system. */
    private static final long PYTHON_TIMEOUT_SECONDS = 600;
    private static final String NS = "default";

    private Cluster cluster;
    private Http claims;

    @BeforeAll
    void up(SharedSystem system) {
        // the system these ITs share (SharedSystem.Shape.ONE_NODE): started by the first of them, stopped after the last
        cluster = system.cluster();
        claims = system.claims();
    }

    private record Run(int code, String out, String err) {
    }

    private Run csi(String... argv) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(argv, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        Run run = new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        System.out.print(run.out());
        System.err.print(run.err());
        return run;
    }

    @Test
    void thePythonExampleClaimsReleasesAndSeesEachRefusalAsTheContractSays() throws Exception {
        String volume = "py-vol";
        String externalId = PluginVolumes.create(volume, List.of(cluster.pluginSocket(SharedSystem.NODE)));
        Http.Response r = claims.post("/v1/volumes", Http.MAPPER.writeValueAsString(Map.of("id", volume, "namespace", NS,
                "name", volume, "externalId", externalId, "pluginId", Cluster.PLUGIN_ID,
                "accessMode", AccessMode.SINGLE_NODE_WRITER.wire(), "attachmentMode", AttachmentMode.FILE_SYSTEM.wire())));
        assertEquals(201, r.status(), r.raw());
        Wait.until("volume " + volume + " schedulable", START, null, () -> {
            Http.Response v = claims.get("/v1/volumes/" + NS + "/" + volume);
            return v.ok() && v.body().path("schedulable").asBoolean() ? Optional.of(true) : Optional.empty();
        });

        Path kit = Files.createTempDirectory(cluster.workDir(), "python-kit-");
        Files.delete(kit);
        Run init = csi("scheduler", "init", "pyexample", "--out", kit.toString(), "--work-dir", cluster.workDir().toString());
        assertEquals(0, init.code(), init.err());
        for (String file : List.of("ca.pem", "kafka-client.pem", "kafka-client.key", "signing.key",
                "claim-service-sealing.jwk", "librdkafka.properties", "java-client.properties", "scheduler.env")) {
            assertTrue(Files.isRegularFile(kit.resolve(file)), file + " missing from the kit " + kit);
        }

        Path home = Path.of(System.getProperty("csi.home", "..")).toAbsolutePath().normalize();
        Path example = home.resolve("examples/python-scheduler/scheduler.py");
        String python = System.getenv().getOrDefault("CSI_PYTHON", "/usr/bin/python3");
        Process p = new ProcessBuilder(python, example.toString(), "--kit", kit.toString(), "demo", "--namespace", NS,
                "--volume", volume, "--node", SharedSystem.NODE)
                .directory(example.getParent().toFile()).redirectErrorStream(true).start();
        boolean ended = p.waitFor(PYTHON_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly().waitFor();
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        System.out.print(out);
        assertTrue(ended, "the Python scheduler did not end within " + PYTHON_TIMEOUT_SECONDS + " s:\n" + out);
        assertEquals(0, p.exitValue(), out);

        JsonNode ready = line(out, "step", "ready");
        assertTrue(ready.path("mounted").asBoolean(), "the host path was a mount point while ready: " + ready);
        assertEquals(SharedSystem.NODE, ready.path("nodeId").asText(), out);
        line(out, "step", "released");
        assertEquals("rejected", line(out, "step", "outside-window").path("state").asText());
        line(out, "demo", "ok");

        Run check = csi("scheduler", "check", "pyexample", "--work-dir", cluster.workDir().toString());
        assertEquals(0, check.code(), check.err());
        assertTrue(check.out().contains("bad signature"), check.out());
        assertTrue(check.out().contains("replayed"), check.out());
    }

    /** The JSON line of the Python's output whose {@code field} is {@code value}. */
    private static JsonNode line(String out, String field, String value) throws Exception {
        for (String l : out.split("\n")) {
            if (l.startsWith("{")) {
                JsonNode n = Http.MAPPER.readTree(l);
                if (value.equals(n.path(field).asText())) {
                    return n;
                }
            }
        }
        throw new AssertionError("no line with " + field + " " + value + " in:\n" + out);
    }
}
