package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * The directory of one local infrastructure process: {@code ports.properties} (the ports and ids chosen on
 * its first start and kept, so a restarted process serves where its clients look) and {@code ready.properties}
 * (written once the process serves, removed when it stops).
 */
public final class StateDir {

    public static final String PORTS = "ports.properties";
    public static final String READY = "ready.properties";

    private final Path dir;

    public StateDir(Path dir) {
        this.dir = dir.toAbsolutePath().normalize();
    }

    public Path path() {
        return dir;
    }

    /** The kept settings; empty when the directory is new. */
    public Properties ports() {
        return read(dir.resolve(PORTS));
    }

    public void writePorts(Properties props) {
        write(dir.resolve(PORTS), props, "kept across restarts; delete the directory to start empty");
    }

    public void writeReady(Properties props) {
        write(dir.resolve(READY), props, "serving");
    }

    public void clearReady() {
        try {
            Files.deleteIfExists(dir.resolve(READY));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Properties read(Path file) {
        Properties props = new Properties();
        if (Files.isRegularFile(file)) {
            try (Reader reader = Files.newBufferedReader(file)) {
                props.load(reader);
            } catch (IOException e) {
                throw new UncheckedIOException("Could not read " + file, e);
            }
        }
        return props;
    }

    static void write(Path file, Properties props, String comment) {
        try {
            Files.createDirectories(file.getParent());
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            try (Writer writer = Files.newBufferedWriter(tmp)) {
                props.store(writer, comment);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not write " + file, e);
        }
    }

    /** {@code <dir> [--ephemeral] [--name value]...}: the directory, the flag, and the repeated options. */
    record Args(Path dir, boolean ephemeral, List<String[]> options) {
        static Args parse(String[] argv, String usage) {
            Path dir = null;
            boolean ephemeral = false;
            List<String[]> options = new ArrayList<>();
            for (int i = 0; i < argv.length; i++) {
                String arg = argv[i];
                if (arg.equals("--ephemeral")) {
                    ephemeral = true;
                } else if (arg.startsWith("--") && i + 1 < argv.length) {
                    options.add(new String[] {arg.substring(2), argv[++i]});
                } else if (!arg.startsWith("--") && dir == null) {
                    dir = Path.of(arg);
                } else {
                    throw new IllegalArgumentException("usage: " + usage);
                }
            }
            if (dir == null) {
                throw new IllegalArgumentException("usage: " + usage);
            }
            return new Args(dir, ephemeral, options);
        }

        List<String> all(String name) {
            return options.stream().filter(o -> o[0].equals(name)).map(o -> o[1]).toList();
        }
    }
}
