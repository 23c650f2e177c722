package io.csiorchestrator.claims.api;

import io.csiorchestrator.claims.api.VolumeResource.ClaimView;
import io.csiorchestrator.claims.api.VolumeResource.ConditionView;
import io.csiorchestrator.claims.api.VolumeResource.MountOptionsView;
import io.csiorchestrator.claims.api.VolumeResource.UsageView;
import io.csiorchestrator.claims.api.VolumeResource.VolumeDetail;
import io.csiorchestrator.claims.api.VolumeResource.VolumeStub;
import io.csiorchestrator.claims.domain.ClaimRules;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.VolumeConditionEntity;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.claims.store.VolumeUsageEntity;
import io.smallrye.mutiny.Uni;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** {@link VolumeResource}'s views of a volume: its stub and its detail, secrets and mount flags redacted. */
final class VolumeViews {

    private VolumeViews() {
    }

    static VolumeStub stub(VolumeEntity v, List<ClaimEntity> active, PluginFacts plugin) {
        int readers = (int) active.stream().filter(c -> c.mode == io.csiorchestrator.events.ClaimMode.READ).count();
        int writers = active.size() - readers;
        String unhealthy = ClaimRules.unschedulableReason(io.csiorchestrator.claims.ClaimRows.facts(v, List.of()), plugin, null);
        return new VolumeStub(v.namespace, v.id, v.name, v.pluginId, v.accessMode, v.attachmentMode, v.claimedAccessMode,
                readers, writers, unhealthy == null, unhealthy == null ? "healthy" : unhealthy, v.deleting,
                io.csiorchestrator.claims.domain.Failover.effective(v.failover).wire());
    }

    static VolumeDetail detail(VolumeEntity v, List<ClaimEntity> all, PluginFacts plugin,
                               List<VolumeConditionEntity> conditions, ConditionView listing, List<VolumeUsageEntity> usage) {
        String unhealthy = ClaimRules.unschedulableReason(io.csiorchestrator.claims.ClaimRows.facts(v, List.of()), plugin, null);
        Map<String, String> redactedSecrets = new LinkedHashMap<>();
        for (String key : Json.list(v.secretKeysJson)) {
            redactedSecrets.put(key, VolumeResource.REDACTED);
        }
        List<ClaimView> current = new ArrayList<>();
        List<ClaimView> past = new ArrayList<>();
        for (ClaimEntity c : all) {
            ClaimView view = new ClaimView(c.allocationId, c.nodeId, c.mode.wire(), c.phase.name().toLowerCase().replace('_', '-'),
                    c.requestId, c.releaseRequestId, c.accessMode.wire(), c.attachmentMode.wire(), c.readOnly, c.hostPath, c.lastError,
                    c.attempt, c.createdAt, c.endedAt, c.pluginWaitSince,
                    c.pluginWaitSince == null ? null : c.retryAt,
                    // A pending claim (issue 19): rejected at this time unless the release it waits for ends first.
                    c.phase == io.csiorchestrator.claims.domain.ClaimMachine.Phase.RELEASE_WAIT ? c.retryAt : null);
            (c.past ? past : current).add(view);
        }
        return new VolumeDetail(v.namespace, v.id, v.name, v.externalId, v.pluginId, v.accessMode, v.attachmentMode,
                v.claimedAccessMode, new MountOptionsView(v.fsType, Collections.nCopies(v.mountFlagCount, VolumeResource.REDACTED)),
                Json.map(v.parametersJson), Json.map(v.contextJson), redactedSecrets, Json.map(v.topologyJson),
                unhealthy == null, unhealthy == null ? "healthy" : unhealthy, v.deleting, current, past,
                conditionViews(all, conditions), io.csiorchestrator.claims.domain.Failover.effective(v.failover).wire(),
                listing, usageViews(all, usage));
    }

    /**
     * The ListVolumes comparison of a volume created through the services (issue 14): abnormal, "volume not listed by
     * plugin P since T", while its plugin's last complete ListVolumes did not list it; null otherwise.
     */
    static ConditionView listing(String pluginId, Instant unlistedSince) {
        if (unlistedSince == null) {
            return null;
        }
        return new ConditionView(null, pluginId, "abnormal",
                io.csiorchestrator.claims.provision.VolumeListings.condition(pluginId, unlistedSince), unlistedSince);
    }

    /** {@link #listing} of the volume's provision (null when it has none: a volume registered, not created). */
    static Uni<ConditionView> provisionListing(String volumeKey) {
        return SessionSql.select("SELECT plugin_id, unlisted_since FROM provisions WHERE volume_key = $1", volumeKey)
                .map(rows -> rows.isEmpty() ? null : listing((String) rows.get(0)[0], SessionSql.instant(rows.get(0)[1])));
    }

    /** The conditions reported from nodes where the volume is claimed now (a node it left reports no more). */
    private static List<ConditionView> conditionViews(List<ClaimEntity> all, List<VolumeConditionEntity> conditions) {
        java.util.Set<String> claimedOn = all.stream().filter(c -> !c.past).map(c -> c.nodeId)
                .collect(Collectors.toSet());
        return conditions.stream().filter(c -> claimedOn.contains(c.nodeId))
                .map(c -> new ConditionView(c.nodeId, c.pluginId, c.abnormal ? "abnormal" : "normal", c.message, c.since))
                .toList();
    }

    /** The usage reported from nodes where the volume is claimed now (a node it left reports no more). */
    private static List<UsageView> usageViews(List<ClaimEntity> all, List<VolumeUsageEntity> usage) {
        java.util.Set<String> claimedOn = all.stream().filter(c -> !c.past).map(c -> c.nodeId)
                .collect(Collectors.toSet());
        return usage.stream().filter(u -> claimedOn.contains(u.nodeId))
                .map(u -> new UsageView(u.nodeId, u.pluginId, u.bytesTotal, u.bytesAvailable, u.bytesUsed, u.inodesTotal,
                        u.inodesFree, u.inodesUsed, u.observedAt))
                .toList();
    }
}
