package io.csiorchestrator.worker.telemetry;

import io.csiorchestrator.events.VolumeUsageFigures;
import io.csiorchestrator.worker.mount.VolumeUsages;
import io.csiorchestrator.worker.state.VolumeKey;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The usage of every volume published on this node as gauges named after kubelet's {@code kubelet_volume_stats_*}
 * (issue 34): {@code csi.volume.stats.capacity.bytes}, {@code .available.bytes}, {@code .used.bytes},
 * {@code .inodes}, {@code .inodes.free}, {@code .inodes.used} ({@code csi_volume_stats_capacity_bytes} ... in
 * Prometheus), tagged {@code volume}, {@code namespace}, {@code plugin} and {@code node}. Unlike the worker's other
 * meters these carry a volume id, as kubelet's carry the claim: one series per published volume, gone when it is
 * unpublished. The rows are rebuilt from {@link VolumeUsages#latest()} by {@link #refresh()} (after each poll); a
 * scrape reads them, never the plugin. A figure the plugin does not report has no series.
 */
public final class VolumeStatsGauges {

    private record Figure(String name, String description, Function<VolumeUsageFigures, Long> value) {
    }

    private static final List<Figure> FIGURES = List.of(
            new Figure("csi.volume.stats.capacity.bytes", "Capacity in bytes of the volume (NodeGetVolumeStats)",
                    VolumeUsageFigures::bytesTotal),
            new Figure("csi.volume.stats.available.bytes", "Number of available bytes in the volume",
                    VolumeUsageFigures::bytesAvailable),
            new Figure("csi.volume.stats.used.bytes", "Number of used bytes in the volume", VolumeUsageFigures::bytesUsed),
            new Figure("csi.volume.stats.inodes", "Maximum number of inodes in the volume", VolumeUsageFigures::inodesTotal),
            new Figure("csi.volume.stats.inodes.free", "Number of free inodes in the volume", VolumeUsageFigures::inodesFree),
            new Figure("csi.volume.stats.inodes.used", "Number of used inodes in the volume", VolumeUsageFigures::inodesUsed));

    private final String nodeId;
    private final Supplier<Map<VolumeKey, VolumeUsages.Seen>> latest;
    private final List<MultiGauge> gauges = new ArrayList<>();

    public VolumeStatsGauges(MeterRegistry registry, String nodeId, Supplier<Map<VolumeKey, VolumeUsages.Seen>> latest) {
        this.nodeId = nodeId;
        this.latest = latest;
        for (Figure f : FIGURES) {
            gauges.add(MultiGauge.builder(f.name()).description(f.description()).register(registry));
        }
    }

    /** Rebuilds every gauge's rows from the last usage seen of each published volume. */
    public synchronized void refresh() {
        Map<VolumeKey, VolumeUsages.Seen> now = latest.get();
        for (int i = 0; i < FIGURES.size(); i++) {
            Figure f = FIGURES.get(i);
            List<MultiGauge.Row<?>> rows = new ArrayList<>();
            for (VolumeUsages.Seen seen : now.values()) {
                Long value = f.value().apply(seen.usage());
                if (value != null) {
                    rows.add(MultiGauge.Row.of(Tags.of("volume", seen.key().volumeId(), "namespace",
                            seen.key().namespace(), "plugin", seen.pluginId(), "node", nodeId), value));
                }
            }
            gauges.get(i).register(rows, true);
        }
    }
}
