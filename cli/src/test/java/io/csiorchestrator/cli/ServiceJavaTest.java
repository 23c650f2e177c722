package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServiceJavaTest {

    @TempDir
    Path dir;

    private Path jdk(String release) throws Exception {
        return jdk("jdk", release);
    }

    private Path jdk(String name, String release) throws Exception {
        Path home = dir.resolve(name);
        Files.createDirectories(home.resolve("bin"));
        Path java = Files.createFile(home.resolve("bin/java"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        assertTrue(Files.isExecutable(java));
        Files.writeString(home.resolve("release"), release);
        return home;
    }

    private static final String JDK25 = "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_RUNTIME_VERSION=\"25.0.1+8-LTS\"\n"
            + "JAVA_VERSION=\"25.0.1\"\n";

    /** A jar as the build leaves it: some bytes, a modification time {@code minutesAgo} minutes ago. */
    private Path jar(int minutesAgo) throws Exception {
        Path jar = dir.resolve("claim-service/target/quarkus-app/quarkus-run.jar");
        Files.createDirectories(jar.getParent());
        Files.writeString(jar, "PK a runner jar");
        Files.setLastModifiedTime(jar, FileTime.from(Instant.now().minus(Duration.ofMinutes(minutesAgo))));
        return jar;
    }

    /** What the service's exit does after a start with {@code -XX:AOTCacheOutput}: the JVM writes the cache. */
    private static void jvmWritesTheCache(Path cache) throws Exception {
        Files.writeString(cache, "a cache");
    }

    /** The decision of a start, then its effect on the files (as Cluster does). */
    private static ServiceJava.Aot start(ServiceJava java, Path jar) {
        ServiceJava.Aot aot = java.aot(jar);
        aot.prepare();
        return aot;
    }

    @Test
    void aJdk25WritesTheCacheAtTheFirstStartAndUsesItAfterwards() throws Exception {
        Path home = jdk(JDK25);
        Path jar = jar(10);
        Path cache = dir.resolve("work/aot/claim-service.aot");
        ServiceJava first = ServiceJava.of(home, cache);
        assertEquals(25, first.major());
        assertEquals("25.0.1+8-LTS", first.version());
        assertEquals(home.resolve("bin/java"), first.java());

        ServiceJava.Aot decision = first.aot(jar);
        assertEquals(ServiceJava.Mode.WRITE, decision.mode());
        assertEquals(List.of("-XX:AOTCacheOutput=" + cache), decision.options());
        assertTrue(ServiceJava.writesCacheAtExit(List.of("-Xmx384m", decision.options().get(0), "-jar", jar.toString())),
                "./csi down tells a JVM that writes its cache at exit by its options");
        assertFalse(Files.exists(cache.getParent()), "deciding changes nothing");
        decision.prepare();
        assertTrue(Files.isDirectory(cache.getParent()), "the cache's directory is made for the JVM to write into");
        assertTrue(Files.isRegularFile(first.record()), "what the cache is made from is recorded beside it");
        assertEquals("claim-service: writes its AOT cache aot/claim-service.aot when it stops (no cache yet)",
                decision.line("claim-service", dir.resolve("work")));

        jvmWritesTheCache(cache);
        ServiceJava.Aot second = start(ServiceJava.of(home, cache), jar);
        assertEquals(ServiceJava.Mode.USE, second.mode());
        assertEquals(List.of("-XX:AOTCache=" + cache), second.options());
        assertFalse(ServiceJava.writesCacheAtExit(List.of("-Xmx384m", second.options().get(0), "-jar", jar.toString())));
        assertEquals("a cache", Files.readString(cache), "a used cache is left as it is");
        assertEquals("claim-service: uses its AOT cache aot/claim-service.aot",
                second.line("claim-service", dir.resolve("work")));
    }

    @Test
    void aJarNewerThanTheCacheMakesANewOne() throws Exception {
        Path home = jdk(JDK25);
        Path jar = jar(10);
        Path cache = dir.resolve("work/aot/claim-service.aot");
        start(ServiceJava.of(home, cache), jar);
        jvmWritesTheCache(cache);
        assertEquals(ServiceJava.Mode.USE, ServiceJava.of(home, cache).aot(jar).mode());

        // a rebuild: Quarkus writes quarkus-run.jar anew, after the cache
        Files.setLastModifiedTime(jar, FileTime.from(Instant.now()));
        ServiceJava.Aot after = start(ServiceJava.of(home, cache), jar);
        assertEquals(ServiceJava.Mode.WRITE, after.mode());
        assertEquals(List.of("-XX:AOTCacheOutput=" + cache), after.options(), "writes the cache, does not also use it");
        assertFalse(Files.exists(cache), "the stale cache is removed before the JVM writes the new one");
        assertTrue(after.reason().equals("quarkus-run.jar changed since the cache was made"), after.reason());

        jvmWritesTheCache(cache);
        assertEquals(ServiceJava.Mode.USE, ServiceJava.of(home, cache).aot(jar).mode(), "the new cache is used");
    }

    @Test
    void anotherJdkMakesANewCache() throws Exception {
        Path home = jdk(JDK25);
        Path jar = jar(10);
        Path cache = dir.resolve("work/aot/claim-service.aot");
        start(ServiceJava.of(home, cache), jar);
        jvmWritesTheCache(cache);

        // the same home updated in place to another build
        Files.writeString(home.resolve("release"), "JAVA_RUNTIME_VERSION=\"25.0.2+10-LTS\"\nJAVA_VERSION=\"25.0.2\"\n");
        ServiceJava.Aot updated = start(ServiceJava.of(home, cache), jar);
        assertEquals(ServiceJava.Mode.WRITE, updated.mode());
        assertTrue(updated.reason().contains("another JDK: " + home.resolve("bin/java") + " 25.0.1+8-LTS"),
                updated.reason());
        jvmWritesTheCache(cache);
        assertEquals(ServiceJava.Mode.USE, ServiceJava.of(home, cache).aot(jar).mode());

        // another JDK home of the same version
        Path other = dir.resolve("other-jdk");
        Files.createDirectories(other.resolve("bin"));
        Files.copy(home.resolve("bin/java"), other.resolve("bin/java"));
        Files.copy(home.resolve("release"), other.resolve("release"));
        ServiceJava.Aot moved = ServiceJava.of(other, cache).aot(jar);
        assertEquals(ServiceJava.Mode.WRITE, moved.mode());
        assertEquals(List.of("-XX:AOTCacheOutput=" + cache), moved.options());
    }

    @Test
    void aCacheWithoutItsRecordIsMadeAgain() throws Exception {
        Path home = jdk(JDK25);
        Path jar = jar(10);
        Path cache = dir.resolve("work/aot/claim-service.aot");
        Files.createDirectories(cache.getParent());
        jvmWritesTheCache(cache); // made before the record existed
        ServiceJava.Aot aot = start(ServiceJava.of(home, cache), jar);
        assertEquals(ServiceJava.Mode.WRITE, aot.mode());
        assertFalse(Files.exists(cache));
        assertTrue(Files.isRegularFile(ServiceJava.of(home, cache).record()));
    }

    @Test
    void anOlderJdkRunsTheServiceWithoutACache() throws Exception {
        Path home = jdk("JAVA_VERSION=\"21.0.5\"\n");
        Path cache = dir.resolve("aot/x.aot");
        ServiceJava java = ServiceJava.of(home, cache);
        assertEquals(21, java.major());
        ServiceJava.Aot aot = start(java, jar(10));
        assertEquals(ServiceJava.Mode.NONE, aot.mode());
        assertEquals(List.of(), aot.options());
        assertFalse(Files.exists(cache.getParent()));
        assertEquals("x: JDK 21.0.5 has no AOT cache (25 or later)", aot.line("x", dir));
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

    @Test
    void upRunsTheServicesOnTheNewestJdk25OrLaterInstalled() throws Exception {
        Path jvms = dir.resolve("jvm");
        Path cli = jdk("cli-17", "JAVA_VERSION=\"17.0.13\"\n");
        jdk("jvm/java-21-openjdk-amd64", "JAVA_VERSION=\"21.0.5\"\n");
        Path adoptium25 = jdk("jvm/temurin-25-jdk-amd64", JDK25);
        jdk("jvm/zz-other-25", JDK25);
        Files.createDirectories(jvms.resolve("default-java-without-release/bin"));
        Files.writeString(jvms.resolve("README"), "not a JDK");
        List<Path> homes = ServiceJava.candidateHomes(jvms);
        assertEquals(Path.of(System.getProperty("java.home")), homes.get(0), "the CLI's own JDK comes first");
        assertEquals(4, homes.size() - 1, "every directory of the system's JDKs, files left out: " + homes);
        List<Path> withOwn = new java.util.ArrayList<>(List.of(cli));
        withOwn.addAll(homes.subList(1, homes.size()));
        assertEquals(java.util.Optional.of(adoptium25), ServiceJava.newestAotHome(withOwn),
                "25 over 17 and 21; of two 25s the first; a directory without release is no candidate");
        Path jdk26 = jdk("jvm/jdk-26", "JAVA_VERSION=\"26-ea\"\n");
        assertEquals(java.util.Optional.of(jdk26), ServiceJava.newestAotHome(ServiceJava.candidateHomes(jvms)));
    }

    @Test
    void withoutAJdk25InstalledTheServicesStayOnTheClisJava() throws Exception {
        Path old = jdk("jvm/java-21-openjdk-amd64", "JAVA_VERSION=\"21.0.5\"\n");
        assertEquals(java.util.Optional.empty(), ServiceJava.newestAotHome(List.of(old, dir.resolve("missing"))));
        assertEquals(java.util.Optional.empty(), ServiceJava.newestAotHome(List.of()));
    }
}
