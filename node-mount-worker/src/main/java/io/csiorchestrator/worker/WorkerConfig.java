package io.csiorchestrator.worker;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/** Settings of the node-mount-worker ({@code csi.worker.*}). */
@ConfigMapping(prefix = "csi.worker")
public interface WorkerConfig {

    /** This node's id (a PathSafeId); the key of its node-commands records. */
    String nodeId();

    /**
     * This node's record-signing key file ({@code csi.worker.identity-key-file}, env {@code CSI_IDENTITY_KEY_FILE} or
     * {@code CSI_WORKER_IDENTITY_KEY_FILE}; issue 20 item 3): every record the worker writes is signed with it. Empty:
     * unsigned (warned at start), and the services dead-letter them.
     */
    Optional<Path> identityKeyFile();

    /**
     * This node's sealing key file ({@code csi.worker.seal-key-file}, env {@code CSI_SEAL_KEY_FILE}; issue 20 item 4):
     * its X25519 keys (0600), which open the secrets claim-service sealed for this node only. Empty: a command carrying
     * secrets fails.
     */
    Optional<Path> sealKeyFile();

    /** The worker's root: staging/, per-alloc/ and records/ live under it. Absolute. */
    @WithDefault("/var/lib/csi-worker")
    Path root();

    /** Where plugins put {@code <plugin-id>/csi.sock}. */
    @WithDefault("/var/lib/csi-worker/plugins")
    Path pluginsDir();

    /** How often each plugin is probed (fingerprinted until healthy). */
    @WithDefault("5s")
    Duration probeInterval();

    /** The deadline of one probe. */
    @WithDefault("5s")
    Duration probeTimeout();

    /** How often plugin-health is re-published as a heartbeat. */
    @WithDefault("30s")
    Duration heartbeatInterval();

    /**
     * The fallback rescan of the plugins directory: the WatchService (inotify on a local directory) triggers rescans
     * at once, so this only bounds how late a plugin is found where events are missed (a network file system). 30 s
     * instead of 2 s (issue 36: fifteen wake-ups a minute of the watcher and the scheduler for nothing).
     */
    @WithDefault("30s")
    Duration rescanInterval();

    /**
     * How long a plugin's socket may stay unreachable (nothing accepts connections on it) before the plugin is
     * deregistered: a last unhealthy fingerprint marked {@code deregistered}, a PLUGIN_DEREGISTERED node event, and
     * the socket file ignored until it is replaced. It is reported unhealthy at once, at the first failed probe.
     */
    @WithDefault("30s")
    Duration pluginDeregisterAfter();

    /** How long restore waits for a volume's plugin after a start before reporting it. */
    @WithDefault("30s")
    Duration restorePluginTimeout();

    /**
     * How often the healer checks every staging and publish target the records say are mounted
     * (stat and the mount table; no plugin call unless one is damaged). 0 turns the check off.
     */
    @WithDefault("10s")
    Duration healInterval();

    /**
     * How often every published volume's stats are polled (NodeGetVolumeStats), where its plugin advertises
     * GET_VOLUME_STATS: its usage (gauges, and volume-usage events when it changed noticeably) and, where the plugin
     * advertises VOLUME_CONDITION too, its condition. 60 s, as kubelet's volume stats and Kubernetes' external health
     * monitor: a volume fills over minutes, and one call per published volume a minute costs nothing measurable.
     * 0 turns polling off.
     */
    @WithDefault("60s")
    Duration conditionInterval();

    /**
     * How often NodeGetInfo is asked again of every healthy node plugin (issue 34): a storage provider's volume limit
     * or topology can change while its plugin runs, and a stale limit in claim-service accepts claims the node then
     * refuses (Kubernetes' KEP-4876). Slow on purpose: such changes are rare, one call per plugin per period costs
     * nothing, and a RESOURCE_EXHAUSTED answer asks again at once. 0 turns the period off.
     */
    @WithDefault("5m")
    Duration nodeInfoInterval();

    /**
     * How often the capacity of each plugin whose controller runs here and advertises GET_CAPACITY is asked
     * (GetCapacity) and reported to claim-service (issue 34), besides after each create, delete and expand. Slow: a
     * capacity moves with volumes created and deleted, which report it at once; the period only catches what changed
     * outside (other writers on the plugin's storage) and refreshes a restarted claim-service. 0 turns it off.
     */
    @WithDefault("5m")
    Duration capacityInterval();

    /** How long opening a plugin socket may take. */
    @WithDefault("10s")
    Duration connectTimeout();

    /** Deadline of each attempt of a stage/publish/... call. */
    @WithDefault("2m")
    Duration callTimeout();

    /** Attempts per plugin call (retrying UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ABORTED). */
    @WithDefault("3")
    int callAttempts();

    /** Volumes operated on concurrently. */
    @WithDefault("4")
    int concurrency();

    /** The consumer group under which this node's offsets are committed; default node-mount-worker-<node id>. */
    Optional<String> consumerGroup();

    /**
     * How often the worker reports its actual state on {@code node-state} (also once at start), for claim-service's
     * anti-entropy.
     */
    @WithDefault("30s")
    Duration stateReportInterval();

    /** Events kept in memory while Kafka is unreachable. */
    @WithDefault("10000")
    int eventQueueCapacity();

    /**
     * Node leases (issue 19): request and renew the node's lease from plugin-registry-service, refuse mounts without a
     * valid lease and commands of an older lease epoch, stamp the epoch on every event, and be ready only with a valid
     * lease. On by default: plugin-registry-service grants the leases; turn it off only for a worker that runs
     * without a registry (its write claims are then never failed over by a lapse: README "Fencing").
     */
    @io.smallrye.config.WithName("fencing.enabled")
    @WithDefault("true")
    boolean fencingEnabled();

    /**
     * The guard process (issue 19, with fencing enabled): a watchdog script beside the worker, fed while the lease is
     * valid, that unmounts the fence plan's paths when it is starved (the worker frozen or dead). False: no process.
     */
    @io.smallrye.config.WithName("fencing.guard")
    @WithDefault("true")
    boolean fencingGuard();
}
