package io.csiorchestrator.claims.capacity;

import io.csiorchestrator.claims.store.Transactions;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.claims.store.VolumeUsageEntity;
import io.csiorchestrator.events.CapacityFigures;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.Violation;
import io.csiorchestrator.events.VolumeUsageFigures;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.ArrayList;
import java.util.List;

/**
 * The node-events of issue 34 claim-service takes in: {@code capacity} into the {@link CapacityView} (memory only),
 * {@code volume-usage} into {@code volume_usage} (the newest per volume and node, for the volume's REST detail, every
 * replica alike). {@link #capacityOf} and {@link #usageOf} refuse a malformed one (the caller dead-letters it) before anything is written.
 */
@ApplicationScoped
public class VolumeUsageReports {

    @Inject
    CapacityView capacity;
    @Inject
    Transactions transactions;

    /** A capacity event's figures, or a {@link MalformedEventException} naming each missing or bad field. */
    public CapacityFigures capacityOf(NodeEvent event) {
        requireNames(event, false);
        return CapacityFigures.fromDetails(event.details());
    }

    /** A volume-usage event's figures, or a {@link MalformedEventException} naming each missing or bad field. */
    public VolumeUsageFigures usageOf(NodeEvent event) {
        requireNames(event, true);
        return VolumeUsageFigures.fromDetails(event.details());
    }

    private static void requireNames(NodeEvent event, boolean volume) {
        List<Violation> problems = new ArrayList<>();
        if (event.pluginId() == null) {
            problems.add(new Violation("pluginId", null, "a " + event.kind().wire() + " event names its plugin"));
        }
        if (volume && event.namespace() == null) {
            problems.add(new Violation("namespace", null, "a volume-usage event names its volume"));
        }
        if (volume && event.volumeId() == null) {
            problems.add(new Violation("volumeId", null, "a volume-usage event names its volume"));
        }
        if (!problems.isEmpty()) {
            throw new MalformedEventException(EventType.NODE_EVENT.displayName(), problems);
        }
    }

    /** A checked capacity event into the view. */
    public void onCapacity(NodeEvent event, CapacityFigures figures) {
        capacity.receive(event.nodeId(), event.pluginId(), figures, event.occurredAt());
    }

    /** A checked volume-usage event stored, unless the row holds newer figures. */
    public Uni<Void> onVolumeUsage(NodeEvent event, VolumeUsageFigures figures) {
        String volumeKey = VolumeEntity.key(event.namespace(), event.volumeId());
        String key = VolumeUsageEntity.key(volumeKey, event.nodeId());
        return transactions.inTransaction(() -> VolumeUsageEntity.byKey(key).chain(found -> {
            if (found != null && found.observedAt.isAfter(event.occurredAt())) {
                return Uni.createFrom().voidItem();
            }
            VolumeUsageEntity row = found != null ? found : new VolumeUsageEntity();
            row.usageKey = key;
            row.volumeKey = volumeKey;
            row.nodeId = event.nodeId();
            row.pluginId = event.pluginId();
            row.bytesTotal = figures.bytesTotal();
            row.bytesAvailable = figures.bytesAvailable();
            row.bytesUsed = figures.bytesUsed();
            row.inodesTotal = figures.inodesTotal();
            row.inodesFree = figures.inodesFree();
            row.inodesUsed = figures.inodesUsed();
            row.observedAt = event.occurredAt();
            return found != null ? row.update() : row.insert();
        }));
    }
}
