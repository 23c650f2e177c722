package io.csiorchestrator.plugins;

import io.csiorchestrator.plugins.api.PluginViews;
import io.csiorchestrator.plugins.store.JsonStringList;
import io.csiorchestrator.plugins.store.JsonStringMap;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * What a native image must keep for reflection that Quarkus does not find on its own: the REST API's
 * JSON shapes (also sent inside an untyped {@code Response}), the JSON column converters and their
 * Jackson type references, and the JDK map Jackson instantiates for them. The contract's events are
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
        JsonStringList.class,
        JsonStringMap.class,
        java.util.TreeMap.class,
}, classNames = {
        "io.csiorchestrator.plugins.store.JsonStringList$1",
        "io.csiorchestrator.plugins.store.JsonStringMap$1",
})
public final class NativeReflection {

    private NativeReflection() {
    }
}
