package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServiceJavaTest {

    @TempDir
    Path dir;

    private Path jdk(String release) throws Exception {
        Path home = dir.resolve("jdk");
        Files.createDirectories(home.resolve("bin"));
        Path java = Files.createFile(home.resolve("bin/java"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        assertTrue(Files.isExecutable(java));
        Files.writeString(home.resolve("release"), release);
        return home;
    }

    @Test
    void aJdk25WritesTheCacheAtTheFirstStartAndUsesItAfterwards() throws Exception {
        Path home = jdk("IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"25.0.1\"\n");
        Path cache = dir.resolve("work/aot/claim-service.aot");
        ServiceJava first = ServiceJava.of(home, cache);
        assertEquals(25, first.major());
        assertEquals(home.resolve("bin/java"), first.java());
        assertEquals(List.of("-XX:AOTCacheOutput=" + cache), first.aotOptions());
        assertTrue(Files.isDirectory(cache.getParent()), "the cache's directory is made for the JVM to write into");
        Files.writeString(cache, "a cache");
        assertEquals(List.of("-XX:AOTCache=" + cache), ServiceJava.of(home, cache).aotOptions());
    }

    @Test
    void anOlderJdkRunsTheServiceWithoutACache() throws Exception {
        Path home = jdk("JAVA_VERSION=\"21.0.5\"\n");
        ServiceJava java = ServiceJava.of(home, dir.resolve("aot/x.aot"));
        assertEquals(21, java.major());
        assertEquals(List.of(), java.aotOptions());
    }

    @Test
    void aHomeWithoutJavaOrVersionIsRefusedNamingThePath() throws Exception {
        IllegalArgumentException noJava = assertThrows(IllegalArgumentException.class,
                () -> ServiceJava.of(dir.resolve("nothing"), dir.resolve("x.aot")));
        assertTrue(noJava.getMessage().contains("CSI_SERVICE_JAVA_HOME=" + dir.resolve("nothing")), noJava.getMessage());
        Path home = jdk("IMPLEMENTOR=\"someone\"\n");
        IllegalArgumentException noVersion = assertThrows(IllegalArgumentException.class,
                () -> ServiceJava.of(home, dir.resolve("x.aot")));
        assertTrue(noVersion.getMessage().contains("no JAVA_VERSION"), noVersion.getMessage());
    }
}
