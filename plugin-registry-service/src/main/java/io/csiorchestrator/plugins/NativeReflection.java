package io.csiorchestrator.plugins;

import io.csiorchestrator.plugins.api.PluginViews;
import io.csiorchestrator.plugins.store.JsonColumns;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * What a native image must keep for reflection that Quarkus does not find on its own: the REST API's
 * JSON shapes (also sent inside an untyped {@code Response}), the Jackson type references of the JSON
 * columns, and the JDK map Jackson instantiates for them. The contract's events are
 * registered by events-schema's reflect-config.json. {@code NativeReflectionTest} fails when one is missing.
 */
@RegisterForReflection(targets = {
        PluginViews.PluginSummary.class,
        PluginViews.PluginDetail.class,
        PluginViews.Instance.class,
        PluginViews.NodeInfo.class,
        PluginViews.ApiError.class,
        PluginViews.Problem.class,
        io.csiorchestrator.plugins.api.NodeResource.NodeView.class,
        io.csiorchestrator.plugins.api.NodeResource.LeaseView.class,
        JsonColumns.StringList.class,
        JsonColumns.StringMap.class,
        java.util.TreeMap.class,
})
public final class NativeReflection {

    private NativeReflection() {
    }
}
