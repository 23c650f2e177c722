package io.csiorchestrator.worker.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.PluginCapability;
import io.csiorchestrator.events.PluginType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PluginSettingsTest {

    @TempDir
    Path dir;

    @Test
    void withoutAFileThePluginSeesHostPaths() {
        PluginSettings settings = PluginSettings.read(dir);
        assertEquals(PluginSettings.DEFAULTS, settings);
        Path host = Path.of("/var/lib/csi-worker/staging/ns/v");
        assertEquals(host, settings.translate(Path.of("/var/lib/csi-worker"), host));
    }

    @Test
    void typeOverrideAndContainerRootAreRead() throws Exception {
        Files.writeString(dir.resolve(PluginSettings.FILE), "type = node\ncontainer-root = /csi\n");
        PluginSettings settings = PluginSettings.read(dir);
        assertEquals(Optional.of(PluginType.NODE), settings.type());
        assertEquals(Path.of("/csi/per-alloc/a1/ns/v"),
                settings.translate(Path.of("/var/lib/csi-worker"), Path.of("/var/lib/csi-worker/per-alloc/a1/ns/v")));
        assertThrows(IllegalArgumentException.class,
                () -> settings.translate(Path.of("/var/lib/csi-worker"), Path.of("/etc/passwd")));
    }

    @Test
    void badSettingsAreRefusedWithTheFileNamed() throws Exception {
        Files.writeString(dir.resolve(PluginSettings.FILE), "container-root = relative/path\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PluginSettings.read(dir));
        assertTrue(e.getMessage().contains(PluginSettings.FILE), e.getMessage());
        Files.writeString(dir.resolve(PluginSettings.FILE), "type = bogus\n");
        assertThrows(IllegalArgumentException.class, () -> PluginSettings.read(dir));
    }

    @Test
    void theTypeIsDerivedFromTheCapabilities() {
        PluginFingerprint.NodeFingerprint node = new PluginFingerprint.NodeFingerprint("n1", 0, Map.of(),
                Set.of(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME));
        PluginFingerprint monolith = new PluginFingerprint("p", "1", Map.of(), true,
                Set.of(PluginCapability.Service.Type.CONTROLLER_SERVICE),
                Set.of(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME), Optional.of(node));
        PluginFingerprint controllerOnly = new PluginFingerprint("p", "1", Map.of(), true,
                Set.of(PluginCapability.Service.Type.CONTROLLER_SERVICE), Set.of(), Optional.empty());
        PluginFingerprint nodeOnly = new PluginFingerprint("p", "1", Map.of(), true, Set.of(), Set.of(), Optional.of(node));
        assertEquals(PluginType.MONOLITH, PluginSupervisor.deriveType(monolith));
        assertEquals(PluginType.CONTROLLER, PluginSupervisor.deriveType(controllerOnly));
        assertEquals(PluginType.NODE, PluginSupervisor.deriveType(nodeOnly));
    }
}
