package io.csiorchestrator.support.security;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.RecordSignature;
import io.csiorchestrator.events.identity.ReplayWindow;
import io.csiorchestrator.events.identity.TrustSet;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.PostConstruct;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The one place both services check who wrote a record (issue 20 items 3 and 5). A worker's record (mount-done,
 * node events, node-state, plugin-health, node-lease-requests) must carry a valid {@link RecordSignature} by a key of
 * the trust file whose principal is {@code node:<the record's nodeId>} ({@link #requireNode}); a claim request one by
 * a {@code scheduler:<id>} key, seen once, with a {@code ce_time} inside the replay window ({@link #requireScheduler}).
 * Anything else fails with a {@link MalformedEventException} whose reason says why ({@code unsigned},
 * {@code unknown kid}, {@code bad signature}, {@code node mismatch}, {@code not a scheduler}, {@code replayed},
 * {@code outside window}): the consumers dead-letter it at once, before any effect, and the partition moves on.
 * Every verdict is counted in {@code csi.records.verified} (tags {@code topic}, {@code result}).
 *
 * <p>The trust file ({@code csi.security.trust-file}, env {@code CSI_TRUST_FILE}) is read at start (a service with
 * enforcement on and no readable trust file does not start) and again when it changes: checked at most once a second,
 * and at once before a record naming an unknown key id is refused, so a node that just joined or a rotated key is
 * believed without a restart. A changed file that cannot be read keeps the last set (logged, path only).
 * {@code csi.security.verify-records=false} turns the checks off (for a rolling upgrade from unsigned producers only;
 * logged at start as a warning); the replay window is {@code csi.security.replay-window} (5 min) either side of now,
 * remembering at most {@code csi.security.replay-memory} (100000) ids.
 */
@ApplicationScoped
public class RecordAuthenticity {

    private static final Logger LOG = Logger.getLogger(RecordAuthenticity.class);
    private static final long RECHECK_NANOS = Duration.ofSeconds(1).toNanos();

    @ConfigProperty(name = "csi.security.verify-records", defaultValue = "true")
    boolean enforce;
    @ConfigProperty(name = "csi.security.trust-file")
    Optional<Path> trustFile;
    @ConfigProperty(name = "csi.security.replay-window", defaultValue = "PT5M")
    Duration replayWindow;
    @ConfigProperty(name = "csi.security.replay-memory", defaultValue = "100000")
    int replayMemory;
    @Inject
    MeterRegistry meters;

    private record Loaded(TrustSet trust, FileTime modified, long size, long checkedNanos) {
    }

    private volatile Loaded loaded = new Loaded(TrustSet.of(java.util.List.of()), null, -1, 0);
    private final ConcurrentHashMap<String, Counter> counters = new ConcurrentHashMap<>();
    private volatile ReplayWindow replay;

    /** Makes the bean at start, so a missing trust file stops the service before it consumes anything. */
    void onStart(@Observes StartupEvent start) {
        LOG.debugf("record signatures %s", enforce ? "enforced" : "off");
    }

    @PostConstruct
    void init() {
        replay = new ReplayWindow(replayWindow, replayMemory);
        if (!enforce) {
            LOG.warn("csi.security.verify-records=false: records are NOT checked for their producer's signature; any"
                    + " producer can act as any node or scheduler (for a rolling upgrade only)");
            return;
        }
        Path file = trustFile.orElseThrow(() -> new IllegalStateException("csi.security.trust-file (CSI_TRUST_FILE) is"
                + " required: the public keys of the nodes and schedulers whose records are believed"));
        TrustSet trust = TrustSet.read(file);
        try {
            loaded = new Loaded(trust, Files.getLastModifiedTime(file), Files.size(file), System.nanoTime());
        } catch (IOException e) {
            throw new IllegalStateException("cannot stat the trust file " + file, e);
        }
        LOG.infof("record signatures enforced: %d keys in %s", trust.entries().size(), file);
    }

    /** Whether records are checked (false only with {@code csi.security.verify-records=false}). */
    public boolean enforced() {
        return enforce;
    }

    /**
     * Requires {@code record} (of {@code eventName}, e.g. mount-done) to be signed by {@code node:<nodeId>}, the
     * node its payload names; otherwise fails with the reason.
     */
    public void requireNode(ConsumerRecord<String, String> record, String eventName, String nodeId) {
        if (!enforce) {
            return;
        }
        TrustSet.Entry signer = signer(record, eventName);
        if (!signer.principal().equals(Principal.node(nodeId))) {
            throw refuse(record, eventName, "node-mismatch", "nodeId", nodeId,
                    "node mismatch: signed by " + signer.principal() + " (kid " + signer.kid() + ")");
        }
        count(record.topic(), "valid");
    }

    /**
     * Requires {@code record} to be signed by a scheduler's key, seen for the first time, with a {@code ce_time}
     * within the replay window of now; otherwise fails with the reason. Returns the scheduler (null when off).
     */
    public Principal requireScheduler(ConsumerRecord<String, String> record, String eventName) {
        if (!enforce) {
            return null;
        }
        TrustSet.Entry signer = signer(record, eventName);
        if (signer.principal().kind() != Principal.Kind.SCHEDULER) {
            throw refuse(record, eventName, "not-a-scheduler", "signature", signer.kid(),
                    "not a scheduler: signed by " + signer.principal());
        }
        CloudEventHeaders headers = CloudEventHeaders.readFrom(record.headers());
        switch (replay.admit(headers.id(), headers.time(), Instant.now())) {
            case REPLAYED -> throw refuse(record, eventName, "replayed", "header ce_id", headers.id(),
                    "replayed: this ce_id was already accepted");
            case OUTSIDE_WINDOW -> throw refuse(record, eventName, "outside-window", "header ce_time", headers.time(),
                    "outside window: more than " + replayWindow + " from now, or older than the ids still remembered");
            case FRESH -> {
            }
        }
        count(record.topic(), "valid");
        return signer.principal();
    }

    private TrustSet.Entry signer(ConsumerRecord<String, String> record, String eventName) {
        byte[] value = record.value() == null ? null : record.value().getBytes(StandardCharsets.UTF_8);
        RecordSignature.Verdict verdict = RecordSignature.verify(trust(false), record.key(), value, record.headers());
        if (verdict.outcome() == RecordSignature.Outcome.UNKNOWN_KID) {
            verdict = RecordSignature.verify(trust(true), record.key(), value, record.headers());
        }
        if (!verdict.valid()) {
            throw refuse(record, eventName, verdict.outcome().tag(), "signature",
                    verdict.kid() == null ? null : "kid " + verdict.kid(), verdict.outcome().reason());
        }
        return verdict.signer();
    }

    private MalformedEventException refuse(ConsumerRecord<String, String> record, String eventName, String result,
                                           String field, Object value, String reason) {
        count(record.topic(), result);
        LOG.warnf("refused %s record %s-%d@%d: %s", eventName, record.topic(), record.partition(), record.offset(), reason);
        return MalformedEventException.single(eventName, field, value, reason);
    }

    private void count(String topic, String result) {
        if (meters == null) {
            return;
        }
        counters.computeIfAbsent(topic + '\u0000' + result, k -> Counter.builder("csi.records.verified")
                .description("Records checked for their producer's signature, by topic and result")
                .tag("topic", topic).tag("result", result).register(meters)).increment();
    }

    /**
     * The trust set, read again when the file changed (checked at most once a second unless {@code now}). Also where
     * claim-service finds the nodes' sealing keys (issue 20 item 4).
     */
    public TrustSet trust(boolean now) {
        Loaded last = loaded;
        if (trustFile.isEmpty() || (!now && System.nanoTime() - last.checkedNanos() < RECHECK_NANOS)) {
            return last.trust();
        }
        Path file = trustFile.get();
        synchronized (this) {
            last = loaded;
            try {
                FileTime modified = Files.getLastModifiedTime(file);
                long size = Files.size(file);
                if (modified.equals(last.modified()) && size == last.size()) {
                    loaded = new Loaded(last.trust(), modified, size, System.nanoTime());
                    return last.trust();
                }
                TrustSet trust = TrustSet.read(file);
                loaded = new Loaded(trust, modified, size, System.nanoTime());
                LOG.infof("trust file %s read again: %d keys", file, trust.entries().size());
                return trust;
            } catch (IOException | RuntimeException e) {
                LOG.warnf("cannot read the trust file %s again (%s); keeping the %d keys read before", file,
                        e.getClass().getSimpleName(), last.trust().entries().size());
                loaded = new Loaded(last.trust(), last.modified(), last.size(), System.nanoTime());
                return last.trust();
            }
        }
    }
}
