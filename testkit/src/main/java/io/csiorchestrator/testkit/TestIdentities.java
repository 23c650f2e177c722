package io.csiorchestrator.testkit;

import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.RecordSignature;
import io.csiorchestrator.events.identity.SealingKeys;
import io.csiorchestrator.events.identity.TrustSet;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Record-signing identities for tests (issue 20 items 3 and 5), made at test time: one Ed25519 key per node and per
 * scheduler, created the first time a test asks for it and added to this JVM's trust file ({@link #trustFile()}, in a
 * temporary directory), which the services under test read ({@link IdentityResource} hands its path to Quarkus as
 * {@code csi.security.trust-file}; the services read it again when it changes, at once for an unknown key id). A
 * {@link #stranger} key is never in the trust file. Sealing keys ({@link #sealing}): every node's and claim-service's,
 * published in the same trust file. Test-only keys: never used outside tests.
 */
public final class TestIdentities {

    /** The scheduler the tests' claim requests come from unless a test names another. */
    public static final String SCHEDULER = "test-scheduler";

    private static final Map<Principal, IdentityKey> KEYS = new ConcurrentHashMap<>();
    private static final Map<Principal, IdentityKey> STRANGERS = new ConcurrentHashMap<>();
    private static final Map<Principal, SealingKeys> SEALING = new ConcurrentHashMap<>();
    /** The principal claim-service seals and opens as (issue 20 item 4). */
    public static final Principal CLAIM_SERVICE = Principal.service("claim-service");
    private static Path dir;
    private static TrustSet trust = TrustSet.of(List.of());

    private TestIdentities() {
    }

    /** This JVM's trust file (created, empty, on first use). */
    public static synchronized Path trustFile() {
        if (dir == null) {
            try {
                dir = Files.createTempDirectory("csi-test-identities");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            trust.write(dir.resolve("trust.json"));
        }
        return dir.resolve("trust.json");
    }

    /** The trusted key of {@code node:<nodeId>}. */
    public static IdentityKey node(String nodeId) {
        return key(Principal.node(nodeId));
    }

    /** The trusted key of {@code scheduler:<schedulerId>}. */
    public static IdentityKey scheduler(String schedulerId) {
        return key(Principal.scheduler(schedulerId));
    }

    /** A key that claims {@code principal} but is in no trust file. */
    public static IdentityKey stranger(Principal principal) {
        return STRANGERS.computeIfAbsent(principal, p -> IdentityKey.generate(p, "stranger." + p.id()));
    }

    /** The trusted key of {@code principal}, made and added to the trust file the first time. */
    public static synchronized IdentityKey key(Principal principal) {
        IdentityKey key = KEYS.get(principal);
        if (key == null) {
            key = IdentityKey.generate(principal, principal.kind().name().toLowerCase(java.util.Locale.ROOT) + "."
                    + principal.id() + ".k1");
            trustFile();
            trust = trust.with(key.publicEntry());
            trust.write(dir.resolve("trust.json"));
            KEYS.put(principal, key);
            if (principal.kind() == Principal.Kind.NODE) {
                sealing(principal);
            }
        }
        return key;
    }

    /**
     * The sealing keys (X25519, issue 20 item 4) of {@code principal}: made, written 0600 to
     * {@code <kind>-<id>.seal.key} beside the trust file and published in it (an {@code enc} key) the first time. Every
     * node with a signing key has them too.
     */
    public static synchronized SealingKeys sealing(Principal principal) {
        SealingKeys keys = SEALING.get(principal);
        if (keys == null) {
            keys = SealingKeys.generate(principal, principal.kind().name().toLowerCase(java.util.Locale.ROOT) + "."
                    + principal.id() + ".enc.k1");
            trustFile();
            keys.write(sealKeyFile(principal));
            trust = trust.with(keys.publicEntry(keys.newest()));
            trust.write(dir.resolve("trust.json"));
            SEALING.put(principal, keys);
        }
        return keys;
    }

    /** Adds a new sealing key for {@code principal} (a rotation): its key file first, then the trust file. */
    public static synchronized SealingKeys rotateSealing(Principal principal, String kid) {
        SealingKeys keys = sealing(principal).withNewKey(kid);
        keys.write(sealKeyFile(principal));
        trust = trust.with(keys.publicEntry(keys.newest()));
        trust.write(dir.resolve("trust.json"));
        SEALING.put(principal, keys);
        return keys;
    }

    /** The sealing key file of {@code principal} (written by {@link #sealing}). */
    public static Path sealKeyFile(Principal principal) {
        return trustFile().resolveSibling(principal.kind().name().toLowerCase(java.util.Locale.ROOT) + "-" + principal.id()
                + ".seal.key");
    }

    /** What a scheduler seals mount flags for: claim-service's newest sealing key in the trust file. */
    public static TrustSet.Entry claimServiceSealingKey() {
        SealingKeys keys = sealing(CLAIM_SERVICE);
        return keys.publicEntry(keys.newest());
    }

    /** Writes {@code node}'s key to a 0600 file of its own (for a worker process) and returns its path. */
    public static Path nodeKeyFile(String nodeId) {
        Path file = trustFile().resolveSibling("node-" + nodeId + ".key");
        node(nodeId).write(file);
        return file;
    }

    /**
     * {@code headers} (as a test sends them: name to text) plus the signature of the record by {@code key}: the
     * map's order is kept, the two signature headers come last.
     */
    public static Map<String, String> signed(IdentityKey key, String recordKey, String value, Map<String, String> headers) {
        Headers h = new RecordHeaders();
        headers.forEach((name, text) -> h.add(name, text == null ? null : text.getBytes(StandardCharsets.UTF_8)));
        RecordSignature.sign(key, recordKey, value == null ? null : value.getBytes(StandardCharsets.UTF_8), h);
        Map<String, String> out = new LinkedHashMap<>();
        for (Header header : h) {
            out.put(header.key(), header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8));
        }
        return out;
    }

    /** Signs a record in place (its headers as they are now). */
    public static void sign(IdentityKey key, String recordKey, byte[] value, Headers headers) {
        RecordSignature.sign(key, recordKey, value, headers);
    }

    /** The principals with a trusted key so far. */
    public static synchronized List<Principal> principals() {
        return new ArrayList<>(KEYS.keySet());
    }

    /**
     * Who writes {@code event} in production, the Kafka principal a test writes it as: a claim request the tests'
     * scheduler ({@link #SCHEDULER}), a node's record ({@code mount-done}, {@code node-events}, {@code node-state}) that
     * node, the registry's records ({@code plugin-status}, {@code node-leases}) the registry.
     */
    public static io.csiorchestrator.events.KafkaAccess.Principal writerOf(io.csiorchestrator.events.ContractEvent event) {
        if (event instanceof io.csiorchestrator.events.ClaimRequested) {
            return io.csiorchestrator.events.KafkaAccess.Principal.scheduler(SCHEDULER);
        }
        String node = nodeOf(event);
        if (node != null) {
            return io.csiorchestrator.events.KafkaAccess.Principal.node(node);
        }
        if (event instanceof io.csiorchestrator.events.PluginStatus || event instanceof io.csiorchestrator.events.NodeLease) {
            return io.csiorchestrator.events.KafkaAccess.Principal.pluginRegistry();
        }
        throw new IllegalArgumentException("no writer of " + event.eventType() + " played by the tests");
    }

    /**
     * Who signs {@code event} as production would: a claim request the tests' scheduler ({@link #SCHEDULER}), a
     * worker's record its node; null for the services' records (plugin-status, node-leases), which are not signed.
     */
    public static IdentityKey signerOf(io.csiorchestrator.events.ContractEvent event) {
        if (event instanceof io.csiorchestrator.events.ClaimRequested) {
            return scheduler(SCHEDULER);
        }
        String node = nodeOf(event);
        return node == null ? null : node(node);
    }

    /** The node a worker's record is from (mount-done, node-events, node-state); null for any other record. */
    private static String nodeOf(io.csiorchestrator.events.ContractEvent event) {
        if (event instanceof io.csiorchestrator.events.MountDone d) {
            return d.nodeId();
        }
        if (event instanceof io.csiorchestrator.events.NodeEvent e) {
            return e.nodeId();
        }
        if (event instanceof io.csiorchestrator.events.NodeStateReported r) {
            return r.nodeId();
        }
        return null;
    }
}
