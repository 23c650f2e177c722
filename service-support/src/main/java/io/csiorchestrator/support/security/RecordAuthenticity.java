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
 * believed without a restart, and a removed key is refused within a second. A changed file that cannot be used (not
 * readable, not JSON, empty, a bad entry) keeps the last set read: logged once as an error naming the file and the
 * problem (the file holds public keys only), {@link #problem()} says it and the gauge
 * {@code csi.security.trust.file.stale} is 1 until a later version of the file is read; that version is not read again
 * until the file changes (its modification time, size or inode).
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

    /** One version of the file on disk: a change of any part of it is a new version. */
    private record Version(FileTime modified, long size, Object fileKey) {
        static final Version MISSING = new Version(null, -1, null);

        static Version of(Path file) throws IOException {
            java.nio.file.attribute.BasicFileAttributes a = Files.readAttributes(file,
                    java.nio.file.attribute.BasicFileAttributes.class);
            return new Version(a.lastModifiedTime(), a.size(), a.fileKey());
        }
    }

    /** The set in use, the version it was read from, and the version last found unusable with why (or nulls). */
    private record Loaded(TrustSet trust, Version version, long checkedNanos, Version bad, String problem) {
    }

    private volatile Loaded loaded = new Loaded(TrustSet.of(java.util.List.of()), null, 0, null, null);
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
        Version version;
        try {
            version = Version.of(file);
        } catch (IOException e) {
            throw new IllegalStateException("cannot stat the trust file " + file, e);
        }
        TrustSet trust = TrustSet.read(file);
        loaded = new Loaded(trust, version, System.nanoTime(), null, null);
        if (meters != null) {
            io.micrometer.core.instrument.Gauge.builder("csi.security.trust.file.stale", this,
                            a -> a.problem() == null ? 0 : 1)
                    .description("1 while the trust file changed to something unusable and the keys read before are used")
                    .strongReference(true).register(meters);
        }
        LOG.infof("record signatures enforced: %d keys in %s", trust.entries().size(), file);
    }

    /**
     * Why the trust file on disk is not the set in use: its latest version could not be used (the file and the problem),
     * so the keys read before are; null while the set in use is the file's.
     */
    public String problem() {
        return loaded.problem();
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
        requireNode(record, record.value() == null ? null : record.value().getBytes(StandardCharsets.UTF_8), eventName, nodeId);
    }

    /** {@link #requireNode(ConsumerRecord, String, String)} over the value's raw bytes ({@link RawValue}). */
    public void requireNode(ConsumerRecord<String, String> record, byte[] raw, String eventName, String nodeId) {
        if (!enforce) {
            return;
        }
        TrustSet.Entry signer = signer(record, raw, eventName);
        if (!signer.principal().equals(Principal.node(nodeId))) {
            throw refuse(record, eventName, "node-mismatch", "nodeId", nodeId,
                    "node mismatch: signed by " + signer.principal() + " (kid " + signer.kid() + ")");
        }
        count(record.topic(), "valid");
    }

    /**
     * Requires {@code record} to be signed by a scheduler's key, seen for the first time, with a {@code ce_time}
     * within the replay window of now; otherwise fails with the reason. Returns the scheduler (null when off).
     * {@code raw}: the value's bytes as read ({@link RawValue}), which the signature covers.
     */
    public Principal requireScheduler(ConsumerRecord<String, String> record, byte[] raw, String eventName) {
        Principal scheduler = requireSchedulerSignature(record, raw, eventName);
        Freshness freshness = freshness(record, eventName);
        if (!freshness.fresh()) {
            throw freshness.refusal();
        }
        return scheduler;
    }

    /**
     * Requires {@code record} to carry a valid signature (over {@code raw}) by a scheduler's key; otherwise fails with
     * the reason ({@code unsigned}, {@code unknown kid}, {@code bad signature}, {@code not a scheduler}). Returns the
     * scheduler; null when the checks are off. The replay window is {@link #freshness}'s.
     */
    public Principal requireSchedulerSignature(ConsumerRecord<String, String> record, byte[] raw, String eventName) {
        if (!enforce) {
            return null;
        }
        TrustSet.Entry signer = signer(record, raw, eventName);
        if (signer.principal().kind() != Principal.Kind.SCHEDULER) {
            throw refuse(record, eventName, "not-a-scheduler", "signature", signer.kid(),
                    "not a scheduler: signed by " + signer.principal());
        }
        return signer.principal();
    }

    /** The replay window's verdict on a record, and when not fresh the refusal to dead-letter it with. */
    public record Freshness(ReplayWindow.Verdict verdict, MalformedEventException refusal) {
        public boolean fresh() {
            return refusal == null;
        }
    }

    /**
     * The replay window's verdict on a signed {@code record} (its {@code ce_id} is remembered when fresh); fresh when
     * the checks are off. A refusal ({@link #REPLAYED}, {@link #OUTSIDE_WINDOW}) is counted as such.
     */
    public Freshness freshness(ConsumerRecord<String, String> record, String eventName) {
        if (!enforce) {
            return new Freshness(ReplayWindow.Verdict.FRESH, null);
        }
        CloudEventHeaders headers = CloudEventHeaders.readFrom(record.headers());
        ReplayWindow.Verdict verdict = replay.admit(headers.id(), headers.time(), Instant.now());
        return new Freshness(verdict, switch (verdict) {
            case REPLAYED -> refuse(record, eventName, "replayed", "header ce_id", headers.id(),
                    REPLAYED + ": this ce_id was already accepted");
            case OUTSIDE_WINDOW -> refuse(record, eventName, "outside-window", "header ce_time", headers.time(),
                    OUTSIDE_WINDOW + ": more than " + replayWindow + " from now, or older than the ids still remembered");
            case FRESH -> {
                count(record.topic(), "valid");
                yield null;
            }
        });
    }

    /** The first words of a replay's refusal. */
    public static final String REPLAYED = "replayed";
    /** The first words of the refusal of a record whose ce_time is outside the replay window. */
    public static final String OUTSIDE_WINDOW = "outside window";

    private TrustSet.Entry signer(ConsumerRecord<String, String> record, byte[] value, String eventName) {
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
            Version version;
            IOException unreadable = null;
            try {
                version = Version.of(file);
            } catch (IOException e) {
                version = Version.MISSING; // gone or not readable: one version until it is back
                unreadable = e;
            }
            if (version.equals(last.version()) || version.equals(last.bad())) {
                // unchanged, or the unusable version already logged: not read (nor logged) again
                loaded = new Loaded(last.trust(), last.version(), System.nanoTime(), last.bad(), last.problem());
                return last.trust();
            }
            try {
                if (unreadable != null) {
                    throw unreadable;
                }
                TrustSet trust = TrustSet.read(file);
                loaded = new Loaded(trust, version, System.nanoTime(), null, null);
                LOG.infof("trust file %s read again: %d keys", file, trust.entries().size());
                return trust;
            } catch (IOException | RuntimeException e) {
                // TrustSet's messages name the file and the entry (kid, position) at fault; the file holds public keys
                String problem = e.getMessage() == null || !e.getMessage().contains(file.toString())
                        ? "trust file " + file + ": " + e : e.getMessage();
                LOG.errorf("%s; keeping the %d keys read before until the file is fixed", problem,
                        last.trust().entries().size());
                loaded = new Loaded(last.trust(), last.version(), System.nanoTime(), version, problem);
                return last.trust();
            }
        }
    }
}
