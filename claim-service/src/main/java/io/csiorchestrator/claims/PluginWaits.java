package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimRules;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * Claims whose node plugin instance is away ({@link ClaimRules#pluginOutage}): they wait within the plugin grace and
 * go on when plugin-status says the instance is healthy again (event-driven: no claim polls its plugin).
 */
@ApplicationScoped
public class PluginWaits {

    private static final Logger LOG = Logger.getLogger(PluginWaits.class);

    @Inject
    ClaimEffects effects;
    @Inject
    ClaimService service;
    @Inject
    Plugins plugins;
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    @Inject
    Transactions transactions;
    /** The placement topic (issue 34): told after commit when a claim on a node begins or ends, or a plugin changes. */
    @Inject
    io.csiorchestrator.claims.placement.PlacementPublisher placement;

    /**
     * A claim's node step and its plugin instance being away ({@link ClaimRules#pluginOutage}): proceed, keep
     * waiting, or give up. {@code failedNow}: the step just failed because the plugin did not answer ({@code why}).
     */
    Uni<Void> onPluginOutage(VolumeEntity volume, ClaimEntity claim, PluginFacts plugin, boolean failedNow, String why) {
        var outage = ClaimRules.pluginOutage(volume.pluginId, claim.nodeId, plugin, claim.pluginWaitSince, failedNow,
                new ClaimRules.PluginGrace(Instant.now(), settings.pluginGrace()), settings.retryBaseBackoff());
        if (outage instanceof ClaimRules.Proceed) {
            return pluginBack(volume, claim, plugin);
        }
        if (outage instanceof ClaimRules.KeepWaiting w) {
            String reason = why == null ? w.reason() : w.reason() + " (" + why + ")";
            return effects.apply(volume, claim, service.machine().waitForPlugin(ClaimRows.snapshot(claim), w.since(), w.until(), reason,
                    claim.pluginWaitSince == null));
        }
        ClaimRules.PluginGone gone = (ClaimRules.PluginGone) outage;
        claim.pluginWaitSince = null;
        boolean waiting = claim.phase == Phase.PLUGIN_WAIT;
        String mode = claim.mode.wire();
        Instant requestedAt = claim.requestedAt;
        LOG.warnf("claim %s (volume %s, node %s): %s", claim.claimId, claim.volumeKey, claim.nodeId, gone.reason());
        if (waiting) {
            ClaimRows.observe(claim, () -> {
                metrics.decision("rejected", gone.code());
                metrics.claimLatency(mode, "rejected", requestedAt);
            });
        }
        String subject = waiting ? "volume " + claim.volumeKey + ": " + mode + " claim by allocation " + claim.allocationId
                + " on node " + claim.nodeId + " rejected: " : "";
        return effects.apply(volume, claim, service.machine().pluginGone(ClaimRows.snapshot(claim), subject + gone.reason()));
    }

    /** The claim's node plugin instance is healthy: its waiting claim starts, its waiting step is sent. */
    Uni<Void> pluginBack(VolumeEntity volume, ClaimEntity claim, PluginFacts plugin) {
        LOG.infof("claim %s (volume %s, node %s): plugin %s is back, waited since %s", claim.claimId, claim.volumeKey,
                claim.nodeId, volume.pluginId, claim.pluginWaitSince);
        claim.pluginWaitSince = null;
        if (claim.phase == Phase.PLUGIN_WAIT) {
            // The plugin may have been unknown while away: take its controller requirement and node id as they are now.
            claim.controllerRequired = plugin.controllerRequired();
            var node = plugin.nodes().get(claim.nodeId);
            claim.externalNodeId = node == null ? null : node.externalNodeId();
            String mode = claim.mode.wire();
            ClaimRows.observe(claim, () -> metrics.decision("accepted", "plugin-back"));
            LOG.infof("claim accepted: volume %s: %s claim by allocation %s on node %s, after waiting for plugin %s",
                    claim.volumeKey, mode, claim.allocationId, claim.nodeId, volume.pluginId);
        }
        return effects.apply(volume, claim, service.machine().pluginBack(ClaimRows.snapshot(claim)));
    }

    /**
     * plugin-status said the claim's node plugin instance is healthy: a claim waiting for it goes on at once
     * (level-triggered: re-read under the volume lock; a redelivered status finds nothing waiting).
     */
    public Uni<Void> pluginMayBeBack(String claimId) {
        return service.onLockedClaim(claimId, (volume, claim) -> {
            if (claim.past || claim.commandId != null || claim.pluginWaitSince == null) {
                return Uni.createFrom().voidItem();
            }
            return plugins.facts(volume.pluginId).chain(plugin -> plugin.hasHealthyNode(claim.nodeId)
                    ? pluginBack(volume, claim, plugin) : Uni.createFrom().voidItem());
        });
    }

    /** Ids of the claims waiting for {@code pluginId} on one of {@code nodeIds}. */
    private Uni<List<String>> waitingFor(String pluginId, java.util.Collection<String> nodeIds) {
        if (nodeIds.isEmpty()) {
            return Uni.createFrom().item(List.of());
        }
        return transactions.reading(() -> SessionSql.strings(
                "SELECT c.claim_id FROM claims c JOIN volumes v ON v.volume_key = c.volume_key"
                        + " WHERE NOT c.past AND c.plugin_wait_since IS NOT NULL AND c.command_id IS NULL"
                        + " AND v.plugin_id = $1 AND c.node_id = ANY(CAST($2 AS varchar[])) ORDER BY c.plugin_wait_since",
                pluginId, nodeIds.toArray(String[]::new)));
    }

    /**
     * Stores the plugin's status; once committed, claims waiting for one of its node instances that is healthy now
     * go on (event-driven: no claim polls its plugin).
     */
    public Uni<Void> onPluginStatus(String pluginId, PluginStatus status) {
        List<String> healthyNodes = status == null ? List.of() : status.nodes().stream()
                .filter(n -> Boolean.TRUE.equals(n.healthy())).map(PluginStatus.NodeInstance::nodeId).toList();
        return service.inTransaction(() -> plugins.apply(pluginId, status))
                .invoke(() -> placement.nodesChanged(pluginId))
                .chain(() -> waitingFor(pluginId, healthyNodes))
                .chain(ids -> {
                    Uni<Void> chain = Uni.createFrom().voidItem();
                    for (String id : ids) {
                        chain = chain.chain(() -> pluginMayBeBack(id));
                    }
                    return chain;
                });
    }
}
