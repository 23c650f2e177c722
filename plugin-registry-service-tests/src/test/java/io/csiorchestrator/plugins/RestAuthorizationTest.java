package io.csiorchestrator.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.plugins.api.PluginResource;
import io.csiorchestrator.testkit.RestAuthorizationScan;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every REST operation of this service names who may call it (RestAuthorizationScan); no Quarkus start. */
class RestAuthorizationTest {

    @Test
    void everyResourceMethodNamesItsRoles() {
        List<Class<?>> resources = RestAuthorizationScan.resourceClasses(PluginResource.class, "io.csiorchestrator.plugins");
        assertTrue(resources.contains(PluginResource.class), "the scan finds the resources: " + resources);
        assertEquals(List.of(), RestAuthorizationScan.unannotated(resources));
    }
}
