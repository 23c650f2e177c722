package io.csiorchestrator.support.security;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.RecordSignature;
import io.csiorchestrator.events.identity.TrustSet;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trust file changing under a running {@link RecordAuthenticity} (the bean as the services make it, on a real file,
 * with real Ed25519 signatures): a corrupted or emptied file keeps the keys read before (records of a trusted node
 * still pass), says why ({@link RecordAuthenticity#problem()}, naming the file and the problem) and sets the gauge
 * {@code csi.security.trust.file.stale}; a rotated file is believed: the new key's records pass, the removed key's are
 * refused, the problem cleared.
 */
class RecordAuthenticityTest {

    static final String NODE = "node-1";

    @TempDir
    Path dir;
    Path file;
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    RecordAuthenticity authenticity;
    final IdentityKey k1 = IdentityKey.generate(Principal.node(NODE), NODE + ".k1");
    final IdentityKey k2 = IdentityKey.generate(Principal.node(NODE), NODE + ".k2");

    @BeforeEach
    void running() {
        file = dir.resolve("trust.json");
        TrustSet.of(List.of(k1.publicEntry())).write(file);
        authenticity = new RecordAuthenticity();
        authenticity.enforce = true;
        authenticity.trustFile = Optional.of(file);
        authenticity.replayWindow = Duration.ofMinutes(5);
        authenticity.replayMemory = 1000;
        authenticity.meters = meters;
        authenticity.init();
    }

    /** A mount-done record of {@link #NODE} signed with {@code key}, as the worker writes it. */
    private static ConsumerRecord<String, String> signed(IdentityKey key) {
        String value = "{\"nodeId\":\"" + NODE + "\"}";
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.MOUNT_DONE, "/test").writeTo(headers);
        RecordSignature.sign(key, NODE, value.getBytes(StandardCharsets.UTF_8), headers);
        return new ConsumerRecord<>("mount-done", 0, 0, 0L, org.apache.kafka.common.record.TimestampType.CREATE_TIME,
                0, 0, NODE, value, headers, Optional.empty());
    }

    private boolean accepted(IdentityKey key) {
        try {
            authenticity.requireNode(signed(key), "mount-done", NODE);
            return true;
        } catch (MalformedEventException e) {
            return false;
        }
    }

    private double stale() {
        return meters.get("csi.security.trust.file.stale").gauge().value();
    }

    @Test
    void aCorruptedOrEmptiedTrustFileKeepsTheKeysReadBeforeAndSaysWhyARotatedOneIsBelieved() throws Exception {
        assertTrue(accepted(k1));
        assertNull(authenticity.problem());
        assertEquals(0, stale());

        // corrupted: a record naming an unknown key makes the service read the file at once
        Files.writeString(file, "{\"keys\": [ {\"kty\":\"OKP\"");
        MalformedEventException unknown = assertThrows(MalformedEventException.class,
                () -> authenticity.requireNode(signed(k2), "mount-done", NODE));
        assertTrue(unknown.getMessage().contains("unknown kid"), unknown.getMessage());
        String problem = authenticity.problem();
        assertTrue(problem != null && problem.contains(file.toString()) && problem.contains("not JSON"), problem);
        assertEquals(1, stale());
        assertTrue(accepted(k1), "the keys read before are still believed");

        // emptied (as a truncating write leaves it): the same
        Files.writeString(file, "");
        assertThrows(MalformedEventException.class, () -> authenticity.requireNode(signed(k2), "mount-done", NODE));
        problem = authenticity.problem();
        assertTrue(problem != null && problem.contains(file.toString()) && problem.contains("has no \"keys\" array"), problem);
        assertEquals(1, stale());
        assertTrue(accepted(k1), "the keys read before are still believed");

        // rotated: k2 in, k1 out; the new key's record is believed at once (its unknown kid makes the file read)
        TrustSet.of(List.of(k2.publicEntry())).write(file);
        assertTrue(accepted(k2), "the new key is believed without a restart");
        assertNull(authenticity.problem(), authenticity.problem());
        assertEquals(0, stale());
        MalformedEventException removed = assertThrows(MalformedEventException.class,
                () -> authenticity.requireNode(signed(k1), "mount-done", NODE));
        assertTrue(removed.getMessage().contains("unknown kid"), removed.getMessage());

        // a key removed with no new one to trigger a read: refused once the file is checked again (at most a second)
        TrustSet.of(List.of(k1.publicEntry(), k2.publicEntry())).write(file);
        assertTrue(accepted(k1));
        TrustSet.of(List.of(k1.publicEntry())).write(file);
        await().atMost(Duration.ofSeconds(10)).until(() -> !accepted(k2));
        assertTrue(accepted(k1));
    }
}
