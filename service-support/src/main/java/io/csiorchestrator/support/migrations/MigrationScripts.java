package io.csiorchestrator.support.migrations;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * The migration scripts of a {@code classpath:} location ({@code classpath:db/migration}): every {@code V*.sql}
 * directly in that folder of every jar or directory of the class path, as Flyway's class-path scanner finds them (in a
 * native image: the resources {@code quarkus.native.resources.includes} puts in it, through its resource file system).
 */
public final class MigrationScripts {

    private static final String CLASSPATH = "classpath:";

    private MigrationScripts() {
    }

    /** The scripts of each location ({@code classpath:db/migration}), read whole. */
    public static List<Migration> load(List<String> locations, ClassLoader loader) {
        List<Migration> all = new ArrayList<>();
        for (String location : locations) {
            String trimmed = location.trim();
            if (!trimmed.startsWith(CLASSPATH)) {
                throw new IllegalArgumentException("csi.database.migration-locations: '" + trimmed
                        + "' is not a classpath: location (e.g. classpath:db/migration)");
            }
            String folder = trimmed.substring(CLASSPATH.length()).replaceAll("^/+|/+$", "");
            for (String name : namesIn(folder, loader)) {
                all.add(Migration.of(name, read(folder + "/" + name, loader)));
            }
        }
        return all;
    }

    private static List<String> namesIn(String folder, ClassLoader loader) {
        TreeSet<String> names = new TreeSet<>();
        try {
            Enumeration<URL> roots = loader.getResources(folder);
            for (URL root : Collections.list(roots)) {
                if (root.getProtocol().equals("jar")) {
                    JarURLConnection jar = (JarURLConnection) root.openConnection();
                    jar.setUseCaches(false);
                    try (JarFile file = jar.getJarFile()) {
                        for (JarEntry entry : Collections.list(file.entries())) {
                            String name = entry.getName();
                            if (name.startsWith(folder + "/") && name.indexOf('/', folder.length() + 1) < 0) {
                                addScript(names, name.substring(folder.length() + 1));
                            }
                        }
                    }
                } else if (root.getProtocol().equals("file")) {
                    try (Stream<Path> files = Files.list(Path.of(root.toURI()))) {
                        files.filter(Files::isRegularFile).forEach(p -> addScript(names, p.getFileName().toString()));
                    }
                } else {
                    // a native image's resources ("resource:"): listed through the file system its runtime provides
                    java.net.URI uri = root.toURI();
                    try {
                        java.nio.file.FileSystems.newFileSystem(uri, java.util.Map.of());
                    } catch (java.nio.file.FileSystemAlreadyExistsException alreadyOpen) {
                        // listed before
                    }
                    try (Stream<Path> files = Files.list(Path.of(uri))) {
                        files.forEach(p -> addScript(names, p.getFileName().toString()));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list migration scripts in classpath:" + folder, e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException("cannot list migration scripts in classpath:" + folder, e);
        }
        return List.copyOf(names);
    }

    private static void addScript(TreeSet<String> names, String name) {
        if (name.startsWith("V") && name.endsWith(".sql")) {
            names.add(name);
        }
    }

    private static String read(String resource, ClassLoader loader) {
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("migration script " + resource + " listed but not readable");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read migration script " + resource, e);
        }
    }
}
