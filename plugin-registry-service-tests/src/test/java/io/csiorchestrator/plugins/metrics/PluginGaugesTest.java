package io.csiorchestrator.plugins.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.micrometer.core.instrument.search.Search;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The gauge cache: newer counts win, removed plugins lose their gauges, a refresh never resurrects one. */
class PluginGaugesTest {

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final PluginGauges gauges = new PluginGauges(registry);

    private double value(String name, String plugin, String state) {
        var gauge = Search.in(registry).name(name).tag("plugin", plugin).tag("state", state).gauge();
        return gauge == null ? Double.NaN : gauge.value();
    }

    private int meters(String plugin) {
        return Search.in(registry).tag("plugin", plugin).meters().size();
    }

    @Test
    void aPluginGetsFourGaugesWithItsCounts() {
        gauges.update("p", new PluginGauges.Counts(1, 1, 2, 3, 4));
        assertEquals(1.0, value(PluginGauges.CONTROLLERS, "p", "healthy"));
        assertEquals(2.0, value(PluginGauges.CONTROLLERS, "p", "expected"));
        assertEquals(3.0, value(PluginGauges.NODES, "p", "healthy"));
        assertEquals(4.0, value(PluginGauges.NODES, "p", "expected"));
        assertEquals(4, meters("p"));
    }

    @Test
    void olderCountsDoNotOverwriteNewerOnes() {
        gauges.update("p", new PluginGauges.Counts(5, 0, 0, 2, 2));
        gauges.update("p", new PluginGauges.Counts(4, 0, 0, 1, 2));
        assertEquals(2.0, value(PluginGauges.NODES, "p", "healthy"));
        long refresh = gauges.startRefresh();
        gauges.replaceAll(refresh, Map.of("p", new PluginGauges.Counts(3, 0, 0, 0, 2)));
        assertEquals(2.0, value(PluginGauges.NODES, "p", "healthy"));
        gauges.replaceAll(gauges.startRefresh(), Map.of("p", new PluginGauges.Counts(6, 0, 0, 1, 3)));
        assertEquals(3.0, value(PluginGauges.NODES, "p", "expected"));
    }

    @Test
    void aRemovedPluginLosesItsGaugesAndAnOlderRefreshDoesNotBringThemBack() {
        long refresh = gauges.startRefresh();
        gauges.update("p", new PluginGauges.Counts(1, 0, 0, 1, 1));
        gauges.remove("p");
        // The refresh read the plugin before it was removed.
        gauges.replaceAll(refresh, Map.of("p", new PluginGauges.Counts(1, 0, 0, 1, 1)));
        assertEquals(0, meters("p"));
        assertNull(gauges.counts("p"));
    }

    @Test
    void aRefreshAddsPluginsChangedElsewhereAndDropsThoseGone() {
        gauges.update("old", new PluginGauges.Counts(1, 0, 0, 1, 1));
        gauges.replaceAll(gauges.startRefresh(), Map.of("other", new PluginGauges.Counts(2, 1, 1, 0, 0)));
        assertEquals(1.0, value(PluginGauges.CONTROLLERS, "other", "expected"));
        assertEquals(0, meters("old"), "not in the store any more");
    }

    @Test
    void aPluginPublishedDuringARefreshIsNotDroppedByIt() {
        long refresh = gauges.startRefresh();
        gauges.update("new", new PluginGauges.Counts(1, 0, 0, 1, 1)); // created after the refresh's read
        gauges.replaceAll(refresh, Map.of());
        assertEquals(1.0, value(PluginGauges.NODES, "new", "expected"));
        gauges.replaceAll(gauges.startRefresh(), Map.of());
        assertEquals(0, meters("new"), "the next refresh decides");
    }
}
