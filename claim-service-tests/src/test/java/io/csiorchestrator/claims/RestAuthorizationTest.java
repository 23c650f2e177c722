package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.api.VolumeResource;
import io.csiorchestrator.testkit.RestAuthorizationScan;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every REST operation of this service names who may call it (RestAuthorizationScan); no Quarkus start. */
class RestAuthorizationTest {

    @Test
    void everyResourceMethodNamesItsRoles() {
        List<Class<?>> resources = RestAuthorizationScan.resourceClasses(VolumeResource.class, "io.csiorchestrator.claims");
        assertTrue(resources.contains(VolumeResource.class), "the scan finds the resources: " + resources);
        assertEquals(List.of(), RestAuthorizationScan.unannotated(resources));
    }
}
