package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The JDK a Quarkus service of {@code ./csi up} runs on when {@value Cluster#SERVICE_JAVA_HOME_ENV} names one, and the
 * JDK 25 AOT cache (JEP 483/514/515: classes loaded and linked, method profiles) that makes its start about twice as
 * fast. The first start of a service writes its cache when the process exits normally ({@code -XX:AOTCacheOutput}:
 * {@code ./csi down} stops it with SIGTERM); every later start uses it ({@code -XX:AOTCache}). A cache made by another
 * JDK or for another jar is refused by the JVM with a warning and the service starts without it; delete
 * {@code <work>/aot} after a rebuild to make a new one. A JDK older than 25 runs the service without a cache.
 *
 * @param java  the JDK's {@code bin/java}
 * @param major its feature release (from its {@code release} file)
 * @param cache the service's cache file
 */
record ServiceJava(Path java, int major, Path cache) {

    private static final Pattern VERSION = Pattern.compile("(?m)^JAVA_VERSION=\"?(\\d+)");

    /** The JDK at {@code home}; fails naming the path when it has no {@code bin/java} or no readable version. */
    static ServiceJava of(Path home, Path cache) {
        Path java = home.resolve("bin").resolve("java");
        if (!Files.isExecutable(java)) {
            throw new IllegalArgumentException(Cluster.SERVICE_JAVA_HOME_ENV + "=" + home + ": no executable " + java);
        }
        String release;
        try {
            release = Files.readString(home.resolve("release"));
        } catch (IOException e) {
            throw new UncheckedIOException(Cluster.SERVICE_JAVA_HOME_ENV + "=" + home + ": cannot read its release file", e);
        }
        Matcher m = VERSION.matcher(release);
        if (!m.find()) {
            throw new IllegalArgumentException(Cluster.SERVICE_JAVA_HOME_ENV + "=" + home + ": no JAVA_VERSION in its release file");
        }
        return new ServiceJava(java, Integer.parseInt(m.group(1)), cache);
    }

    /** The JVM options for the cache: use it when it exists, else write it at exit; none before JDK 25. */
    List<String> aotOptions() {
        if (major < 25) {
            return List.of();
        }
        if (Files.isRegularFile(cache)) {
            return List.of("-XX:AOTCache=" + cache);
        }
        try {
            Files.createDirectories(cache.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + cache.getParent(), e);
        }
        return List.of("-XX:AOTCacheOutput=" + cache);
    }
}
