package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The JDK a Quarkus service of {@code ./csi up} runs on ({@value Cluster#SERVICE_JAVA_HOME_ENV}, else the newest JDK
 * 25 or later installed, {@link #newestAotHome}), and the JDK 25 AOT cache (JEP 483/514/515: classes loaded and linked, method profiles) that makes its start about twice as
 * fast.
 *
 * <p>Each service has its cache {@code <work>/aot/<name>.aot} and beside it a record {@code <name>.aot.properties} of
 * what the cache is made from: the JDK ({@code bin/java}'s path and the {@code release} file's version) and the jar
 * the service runs ({@code quarkus-run.jar}: its path, modification time and size; Quarkus writes it anew at every
 * package, and the JVM checks the class path's jars by modification time and size too). A start
 * {@linkplain #aot decides} with no effect on the files:
 * <ul>
 * <li>the cache and its record exist and the record names this JDK and this jar as it is now: the service uses the
 * cache ({@code -XX:AOTCache});</li>
 * <li>else (no cache yet, a jar rebuilt or touched since, another JDK, no record): the service writes a new cache when
 * it exits normally ({@code -XX:AOTCacheOutput}; {@code ./csi down} stops it with SIGTERM).</li>
 * </ul>
 * The command is told one of the two, never both. Before a write, {@link Aot#prepare()} removes the old cache and its
 * record (unlinked, not truncated: a running JVM that maps the old file keeps it) and records what the new one is
 * made from. A start whose process does not exit normally writes no cache, so the next start writes one again. A JDK
 * older than 25 runs the service without a cache.
 *
 * @param java    the JDK's {@code bin/java}
 * @param major   its feature release (from its {@code release} file)
 * @param version its full version ({@code JAVA_RUNTIME_VERSION}, else {@code JAVA_VERSION}, of its {@code release} file)
 * @param cache   the service's cache file
 */
record ServiceJava(Path java, int major, String version, Path cache) {

    private static final Pattern VERSION = Pattern.compile("(?m)^JAVA_VERSION=\"?((\\d+)[^\"\\s]*)");
    private static final Pattern RUNTIME_VERSION = Pattern.compile("(?m)^JAVA_RUNTIME_VERSION=\"?([^\"\\s]+)");

    /** The keys of the record beside the cache. */
    static final String JAVA = "java";
    static final String JAVA_VERSION = "java.version";
    static final String JAR = "jar";
    static final String JAR_MODIFIED = "jar.modified-millis";
    static final String JAR_SIZE = "jar.size";

    /** The option of a start that writes its cache at exit ({@link Mode#WRITE}). */
    static final String CACHE_OUTPUT_OPTION = "-XX:AOTCacheOutput=";

    /** The feature release of the JDK at {@code home} (its {@code release} file); fails as {@link #of} does. */
    static int feature(Path home) {
        return of(home, null).major();
    }

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
        Matcher runtime = RUNTIME_VERSION.matcher(release);
        return new ServiceJava(java, Integer.parseInt(m.group(2)), runtime.find() ? runtime.group(1) : m.group(1), cache);
    }

    /** The oldest JDK that has an AOT cache (JEP 483). */
    static final int AOT_FEATURE = 25;

    /** Where Debian, Ubuntu and the Adoptium packages install JDKs. */
    static final Path SYSTEM_JDKS = Path.of("/usr/lib/jvm");

    /**
     * The newest JDK {@value #AOT_FEATURE} or later among {@code homes} (the CLI's own and the system's, in that order:
     * of two of one feature release the first wins); empty when none is, or none has a {@code bin/java} and a readable
     * version. This is what {@code ./csi up} runs the services on when {@value Cluster#SERVICE_JAVA_HOME_ENV} is unset.
     */
    static Optional<Path> newestAotHome(List<Path> homes) {
        Path best = null;
        int bestMajor = AOT_FEATURE - 1;
        for (Path home : homes) {
            try {
                int major = feature(home);
                if (major > bestMajor) {
                    best = home;
                    bestMajor = major;
                }
            } catch (IllegalArgumentException | UncheckedIOException notAJdk) {
                // a directory of /usr/lib/jvm that is a link farm or a JRE without release file: not a candidate
            }
        }
        return Optional.ofNullable(best);
    }

    /** The CLI's own JDK home, then each directory in {@code systemJdks} by name. */
    static List<Path> candidateHomes(Path systemJdks) {
        List<Path> homes = new java.util.ArrayList<>();
        homes.add(Path.of(System.getProperty("java.home")));
        if (Files.isDirectory(systemJdks)) {
            try (java.util.stream.Stream<Path> dirs = Files.list(systemJdks)) {
                dirs.filter(Files::isDirectory).sorted().forEach(homes::add);
            } catch (IOException e) {
                // unreadable: the CLI's own JDK only
            }
        }
        return homes;
    }

    /**
     * Whether a JVM started with {@code arguments} writes its AOT cache when it stops ({@link Mode#WRITE}): a child JVM
     * assembles it at the exit, tens of seconds on a small machine, and {@code ./csi down} says so while it waits.
     */
    static boolean writesCacheAtExit(List<String> arguments) {
        return arguments.stream().anyMatch(a -> a.startsWith(CACHE_OUTPUT_OPTION));
    }

    /** The record beside the cache: {@code <name>.aot.properties}. */
    Path record() {
        return cache.resolveSibling(cache.getFileName() + ".properties");
    }

    /** What a start does with the cache. */
    enum Mode {
        /** A JDK older than 25: no cache. */
        NONE,
        /** {@code -XX:AOTCache}: the cache is there and made from this JDK and this jar. */
        USE,
        /** {@code -XX:AOTCacheOutput}: a new cache, written when the process exits normally. */
        WRITE
    }

    /**
     * What a start running {@code jar} does with the cache (see the class comment); reads the cache's record and the
     * jar's attributes and changes nothing.
     */
    Aot aot(Path jar) {
        if (major < AOT_FEATURE) {
            return new Aot(Mode.NONE, this, Map.of(), "JDK " + version + " has no AOT cache (25 or later)");
        }
        Map<String, String> now = madeFrom(jar);
        if (!Files.isRegularFile(cache)) {
            return new Aot(Mode.WRITE, this, now, "no cache yet");
        }
        Map<String, String> recorded = readRecord();
        if (recorded.isEmpty()) {
            return new Aot(Mode.WRITE, this, now, "no record of what the cache was made from");
        }
        if (!now.get(JAVA).equals(recorded.get(JAVA)) || !now.get(JAVA_VERSION).equals(recorded.get(JAVA_VERSION))) {
            return new Aot(Mode.WRITE, this, now, "the cache was made by another JDK: " + recorded.get(JAVA) + " "
                    + recorded.get(JAVA_VERSION));
        }
        if (!now.equals(recorded)) {
            return new Aot(Mode.WRITE, this, now, jar.getFileName() + " changed since the cache was made");
        }
        return new Aot(Mode.USE, this, now, "made from this JDK and jar");
    }

    /** What a cache made now for {@code jar} would be made from: this JDK, and the jar's path, modification time and size. */
    private Map<String, String> madeFrom(Path jar) {
        Map<String, String> from = new LinkedHashMap<>();
        from.put(JAVA, java.toString());
        from.put(JAVA_VERSION, version);
        try {
            Path real = jar.toAbsolutePath().normalize();
            from.put(JAR, real.toString());
            from.put(JAR_MODIFIED, Long.toString(Files.getLastModifiedTime(real).toMillis()));
            from.put(JAR_SIZE, Long.toString(Files.size(real)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + jar, e);
        }
        return from;
    }

    /** The record beside the cache; empty when there is none or it cannot be read. */
    private Map<String, String> readRecord() {
        Path record = record();
        if (!Files.isRegularFile(record)) {
            return Map.of();
        }
        Properties props = new Properties();
        try (Reader reader = Files.newBufferedReader(record)) {
            props.load(reader);
        } catch (IOException | IllegalArgumentException e) {
            return Map.of();
        }
        Map<String, String> map = new LinkedHashMap<>();
        props.stringPropertyNames().forEach(key -> map.put(key, props.getProperty(key)));
        return map;
    }

    /**
     * One start's decision.
     *
     * @param mode     use the cache, write a new one, or none
     * @param java     the JDK and the cache
     * @param madeFrom what a cache written by this start is made from (the record {@link #prepare()} writes)
     * @param reason   why, in a few words
     */
    record Aot(Mode mode, ServiceJava java, Map<String, String> madeFrom, String reason) {

        Aot {
            madeFrom = Map.copyOf(madeFrom);
        }

        /** The JVM options: {@code -XX:AOTCache} or {@code -XX:AOTCacheOutput} on the cache, or none. */
        List<String> options() {
            return switch (mode) {
                case NONE -> List.of();
                case USE -> List.of("-XX:AOTCache=" + java.cache());
                case WRITE -> List.of(CACHE_OUTPUT_OPTION + java.cache());
            };
        }

        /**
         * The files for the start, before it: for a write, removes the old cache and its record, makes the cache's
         * directory and writes the record of what the new cache is made from; nothing otherwise.
         */
        void prepare() {
            if (mode != Mode.WRITE) {
                return;
            }
            Path cache = java.cache();
            try {
                Files.createDirectories(cache.getParent());
                Files.deleteIfExists(java.record());
                // unlinked, not overwritten: a JVM still mapping the old cache keeps its copy
                Files.deleteIfExists(cache);
                Properties props = new Properties();
                props.putAll(madeFrom);
                try (Writer writer = Files.newBufferedWriter(java.record())) {
                    props.store(writer, "what " + cache.getFileName() + " is made from: ./csi up writes a new cache"
                            + " when any of this differs");
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot prepare the AOT cache " + cache, e);
            }
        }

        /** The line {@code up} prints for service {@code name}, the cache's path relative to {@code workDir}. */
        String line(String name, Path workDir) {
            Path cache = java.cache().startsWith(workDir) ? workDir.relativize(java.cache()) : java.cache();
            return switch (mode) {
                case NONE -> name + ": " + reason;
                case USE -> name + ": uses its AOT cache " + cache;
                case WRITE -> name + ": writes its AOT cache " + cache + " when it stops (" + reason + ")";
            };
        }
    }
}
