package io.csiorchestrator.csi;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Opening real unix sockets that are not there: no plugin needed. */
class CsiSocketChannelsTest {

    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

    @TempDir
    Path dir;

    @Test
    void aMissingSocketFailsWithTheSocketPathAndWhatToCheck() {
        Path socket = dir.resolve("csi.sock");

        CsiSocketException failure = assertThrows(CsiSocketException.class, () -> CsiPluginClient
                .connect(socket, CsiClientOptions.defaults().withConnectTimeout(CONNECT_TIMEOUT))
                .await().atMost(Duration.ofSeconds(30)));

        assertEquals(socket, failure.socketPath());
        assertEquals("failed to open CSI socket " + socket
                        + ": check that the plugin runs and that this process may access the socket (no such file)",
                failure.getMessage());
    }

    @Test
    void aRegularFileIsNamedAsNotASocket() throws Exception {
        Path notASocket = Files.writeString(dir.resolve("csi.sock"), "not a socket");

        CsiSocketException failure = assertThrows(CsiSocketException.class, () -> CsiPluginClient
                .connect("unix://" + notASocket, CsiClientOptions.defaults().withConnectTimeout(CONNECT_TIMEOUT))
                .await().atMost(Duration.ofSeconds(30)));

        assertTrue(failure.getMessage().startsWith("failed to open CSI socket " + notASocket + ": "),
                failure.getMessage());
        assertTrue(failure.getMessage().endsWith("(a regular file, not a socket)"), failure.getMessage());
    }

    @Test
    void endpointsAreUnixUrlsOrAbsolutePaths() {
        assertEquals(Path.of("/run/csi/csi.sock"), CsiSocketChannels.socketPathOf("unix:///run/csi/csi.sock"));
        assertEquals(Path.of("/run/csi/csi.sock"), CsiSocketChannels.socketPathOf("/run/csi/../csi/csi.sock"));
        assertThrows(IllegalArgumentException.class, () -> CsiSocketChannels.socketPathOf("unix://relative.sock"));
        assertThrows(IllegalArgumentException.class, () -> CsiSocketChannels.socketPathOf("tcp://127.0.0.1:10000"));
        assertThrows(IllegalArgumentException.class, () -> CsiSocketChannels.socketPathOf(""));
    }
}
