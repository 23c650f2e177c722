package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import java.time.Duration;

/** The claim-service's own settings ({@code csi.claims.*}). */
@ConfigMapping(prefix = "csi.claims")
public interface ClaimSettings {

    Outbox outbox();

    Leader leader();

    @WithName("anti-entropy")
    AntiEntropy antiEntropy();

    /**
     * How long handling a record is retried when it fails for another reason than the record being
     * malformed or the database being away (those: dead-lettered at once / retried while it lasts);
     * then the record is dead-lettered with the reason.
     */
    @WithName("consumer-retry-budget")
    @WithDefault("45s")
    Duration consumerRetryBudget();

    /** How long a node command may go unanswered before it counts as DEADLINE_EXCEEDED. */
    @WithName("command-timeout")
    @WithDefault("2m")
    Duration commandTimeout();

    /**
     * How long a claim stays pending (claim-status PENDING) while a conflicting claim's release ends (e.g. the previous
     * writer's lease wait or storage fence, issue 19); past it the claim is rejected with what it waited for.
     */
    @WithName("pending-timeout")
    @WithDefault("2m")
    Duration pendingTimeout();

    /** A node whose plugin instance is missing or unhealthy for longer than this is assumed detached. */
    @WithName("node-gone-timeout")
    @WithDefault("10m")
    Duration nodeGoneTimeout();

    /**
     * How long a claim (and its mount, unmount or release) waits for its node's plugin instance that was healthy
     * and is away (restarting, upgraded): it goes on when plugin-status says the instance is healthy again, and
     * is rejected (a publish step failed, a teardown step retried with a status) only when it stays away longer.
     */
    @WithName("plugin-grace")
    @WithDefault("30s")
    Duration pluginGrace();

    /** Attempts of a publish step (controller publish, mount) on retryable errors before the claim is rolled back. */
    @WithName("max-publish-attempts")
    @WithDefault("3")
    int maxPublishAttempts();

    @WithName("retry-base-backoff")
    @WithDefault("1s")
    Duration retryBaseBackoff();

    @WithName("retry-max-backoff")
    @WithDefault("1m")
    Duration retryMaxBackoff();

    /** Past claims (and answered request ids) older than this are purged. */
    @WithName("past-claims-retention")
    @WithDefault("24h")
    Duration pastClaimsRetention();

    /** At most this many claims are reconciled per kind of work and tick (the reconcile loop's rate limit). */
    @WithName("reconcile-batch")
    @WithDefault("50")
    int reconcileBatch();

    default ClaimMachine.Policy policy() {
        return new ClaimMachine.Policy(maxPublishAttempts(), retryBaseBackoff(), retryMaxBackoff());
    }

    /**
     * The least time between two reconcile passes ({@code ReconcileSchedule}: a pass runs when something falls due,
     * never more often than this).
     */
    @WithName("reconcile-interval")
    @WithDefault("5s")
    Duration reconcileInterval();

    /** Anti-entropy: the repairs of differences between the nodes' reports of their actual state and the claims. */
    interface AntiEntropy {
        /**
         * How long a difference must last (from the first report that showed it, or the claim's last transition if
         * later) before it is repaired: covers a mount or release being carried out right now, a worker restoring
         * after its start, and clock skew between the nodes and claim-service. Keep it above twice the workers'
         * {@code csi.worker.state-report-interval}.
         */
        @WithDefault("90s")
        Duration grace();

        /** Repairs started per minute, at most (a token bucket refilled at this rate); more wait for a later report. */
        @WithName("repairs-per-minute")
        @WithDefault("30")
        int repairsPerMinute();

        /** Repairs that may start at once (the token bucket's size). */
        @WithName("repair-burst")
        @WithDefault("10")
        int repairBurst();
    }

    /** The status page's Kafka reader ({@code status.StatusFeedReader}). */
    @WithName("status-feed")
    StatusFeed statusFeed();

    interface StatusFeed {
        /** How long the reader outlives its last listener: a page reload subscribes again within a second or two. */
        @WithDefault("30s")
        Duration linger();
    }

    interface Leader {
        /** How often a non-leader tries the leader lock, and how often the leader checks its connection. */
        @WithName("retry-interval")
        @WithDefault("5s")
        Duration retryInterval();
    }

    interface Outbox {
        /** The safety sweep's interval (used by {@code OutboxRelay}'s schedule). */
        @WithName("sweep-interval")
        @WithDefault("30s")
        Duration sweepInterval();

        /** Rows published per round trip. */
        @WithName("batch-size")
        @WithDefault("200")
        int batchSize();

        /** How long the relay waits for the broker's acknowledgement of a batch. */
        @WithName("send-timeout")
        @WithDefault("30s")
        Duration sendTimeout();

        /**
         * How old the relay producer's view of the topics may get ({@code metadata.max.age.ms}): partitions
         * added to node-commands are routed to within this time.
         */
        @WithName("metadata-max-age")
        @WithDefault("30s")
        Duration metadataMaxAge();
    }
}
