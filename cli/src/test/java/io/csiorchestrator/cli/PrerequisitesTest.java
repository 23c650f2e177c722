package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cli/prerequisites.sh}, the one list of the machine's tools (issue 35 items 2 and 5), run for real by
 * {@link Prerequisites} on a PATH of this test's own: a directory of stand-in tools (each a script that exits 0), so
 * that what is missing is what the test left out, whatever this machine has installed. The user is root here (the
 * tests need it), so the root check passes; {@code id} is the real one.
 */
class PrerequisitesTest {

    static final Path HOME = Path.of(System.getProperty("csi.home", "..")).toAbsolutePath().normalize();

    @TempDir
    Path bin;

    private Map<String, String> pathWith(List<String> tools) throws Exception {
        for (String tool : tools) {
            Path stub = bin.resolve(tool);
            Files.writeString(stub, "#!/bin/sh\nexit 0\n");
            Files.setPosixFilePermissions(stub, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        Files.createSymbolicLink(bin.resolve("id"), Path.of("/usr/bin/id"));
        return Map.of("PATH", bin.toString());
    }

    /** A chaos run with a partition fault on a PATH that has ip and nsenter but no nft: nft and nftables named. */
    @Test
    void aPathWithoutNftFailsNamingNftAndItsPackage() throws Exception {
        Optional<String> problem = Prerequisites.check(HOME, pathWith(List.of("ip", "nsenter")), "partitions");
        assertTrue(problem.isPresent(), "nft is missing from " + bin);
        String said = problem.get();
        assertTrue(said.lines().anyMatch(l -> l.trim().startsWith("nft ") && l.contains("(package nftables)")), said);
        assertTrue(said.contains("install with: apt-get install -y nftables"), said);
        assertFalse(said.lines().anyMatch(l -> l.trim().startsWith("ip ") || l.trim().startsWith("nsenter ")),
                "only what is missing is named: " + said);
    }

    /** The same PATH with nft on it: nothing missing, nothing said. */
    @Test
    void theSamePathWithNftPasses() throws Exception {
        assertEquals(Optional.empty(), Prerequisites.check(HOME, pathWith(List.of("ip", "nsenter", "nft")), "partitions"));
    }

    /**
     * What {@code ./csi test} checks first: on a PATH with none of the tools every missing one is listed with its
     * package (mount's, util-linux's, iproute2's, nftables', Compose's, Chromium's and its driver's), and the apt-get
     * line names each package once.
     */
    @Test
    void theTestCommandsListNamesEveryPackage() throws Exception {
        String said = Prerequisites.check(HOME, pathWith(List.of()), "test").orElseThrow();
        for (String tool : List.of("mount", "umount", "setsid", "flock", "ip", "nft", "nsenter", "docker-compose",
                "chromium", "chromedriver")) {
            assertTrue(said.lines().anyMatch(l -> l.trim().startsWith(tool + " ")), tool + " not named: " + said);
        }
        String install = said.lines().filter(l -> l.startsWith("install with: ")).findFirst().orElseThrow();
        for (String pkg : List.of("mount", "util-linux", "iproute2", "nftables", "docker-compose", "chromium",
                "chromium-driver")) {
            assertEquals(1, List.of(install.substring("install with: apt-get install -y ".length()).split(" "))
                    .stream().filter(pkg::equals).count(), pkg + " once in: " + install);
        }
    }
}
