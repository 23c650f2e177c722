package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.SecretSealer;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.TrustSet;
import io.csiorchestrator.events.identity.X25519Keys;
import io.csiorchestrator.testkit.TestIdentities;
import io.quarkus.test.junit.QuarkusTest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 33 item 5 without the login: the records of the example scheduler in Python (examples/python-scheduler,
 * written from CONTRACT.md, python3-cryptography on Debian's /usr/bin/python3) are taken by the real claim-service
 * on the testkit broker and database: a write claim with mount flags it sealed is accepted and its flags reach the
 * node's mount command (re-sealed for the node), and its record with a ce_time 10 minutes old is answered rejected,
 * "outside window". The Python signs with the tests' trusted scheduler key and seals for claim-service's test key.
 */
@QuarkusTest
class PythonSchedulerRecordsTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    /** The example prints one record and ends: seconds; a minute only against a hung interpreter. */
    private static final long PYTHON_TIMEOUT_SECONDS = 60;

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    /** One record made by {@code scheduler.py record}, sent as it printed it. */
    private JsonNode pythonRecord(Path keys, String vol, String alloc, int ceTimeShift, String... flags) throws Exception {
        Path example = Path.of("..", "examples", "python-scheduler", "scheduler.py").toAbsolutePath().normalize();
        List<String> argv = new ArrayList<>(List.of(System.getenv().getOrDefault("CSI_PYTHON", "/usr/bin/python3"),
                example.toString(), "record", "--signing-key", keys.resolve("signing.key").toString(),
                "--sealing-key", keys.resolve("claim-service-sealing.jwk").toString(), "--namespace", "ns1",
                "--volume", vol, "--node", "node-a", "--allocation", alloc, "--mode", "write",
                "--ce-time-shift", Integer.toString(ceTimeShift)));
        for (String f : flags) {
            argv.add("--mount-flag");
            argv.add(f);
        }
        Process p = new ProcessBuilder(argv).directory(example.getParent().toFile()).redirectErrorStream(true).start();
        boolean ended = p.waitFor(PYTHON_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended && p.exitValue() == 0, "scheduler.py record failed: " + out);
        JsonNode record = JSON.readTree(out);
        List<Header> headers = new ArrayList<>();
        record.path("headers").forEach(h -> headers.add(new RecordHeader(h.get(0).asText(),
                h.get(1).asText().getBytes(StandardCharsets.UTF_8))));
        bus.kafka.send(new ProducerRecord<>(Bus.topic(Topic.CLAIM_REQUESTED), null, record.path("key").asText(),
                record.path("value").asText(), headers));
        return JSON.readTree(record.path("value").asText());
    }

    @Test
    void thePythonExamplesRecordsAreTakenAsTheContractSays() throws Exception {
        Path keys = Files.createTempDirectory("python-scheduler-keys");
        TestIdentities.scheduler(TestIdentities.SCHEDULER).write(keys.resolve("signing.key"));
        TrustSet.Entry claimService = TestIdentities.claimServiceSealingKey();
        Files.writeString(keys.resolve("claim-service-sealing.jwk"), JSON.createObjectNode().put("kty", "OKP")
                .put("crv", "X25519").put("use", "enc").put("kid", claimService.kid()).put("sub", "claim-service")
                .put("x", Base64.getUrlEncoder().withoutPadding().encodeToString(X25519Keys.raw(claimService.key())))
                .toString());

        String plugin = ClaimFlowTest.unique("plug");
        String vol = SealedMountFlagsTest.registerVolumeWithFlags(ClaimFlowTest.unique("python"), plugin);
        bus.plugin(plugin, false, List.of(), List.of("node-a"));
        ClaimFlowTest.awaitSchedulable("ns1", vol);

        JsonNode stale = pythonRecord(keys, vol, "alloc-stale", -600);
        ClaimStatus rejected = bus.awaitStatus(stale.path("requestId").asText(), ClaimState.REJECTED);
        assertTrue(rejected.reason().contains("outside window"), rejected.reason());

        JsonNode claim = pythonRecord(keys, vol, "alloc-1", 0, "noatime", "nodiratime");
        bus.awaitStatus(claim.path("requestId").asText(), ClaimState.ACCEPTED);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(List.of("noatime", "nodiratime"), SecretSealer.open(mount.sealed(),
                TestIdentities.sealing(Principal.node("node-a")), "ns1", vol).mountFlags());
    }
}
