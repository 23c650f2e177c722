package io.csiorchestrator.testkit;

import java.util.LinkedHashMap;
import java.util.Map;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;

/**
 * Quarkus test resource giving the application a real PostgreSQL: one {@link EmbeddedPostgresServer} per JVM,
 * started lazily and stopped when the JVM exits, and a fresh empty database ({@code test_<n>}) each time the
 * resource starts (so each Quarkus application start gets its own schema; dropped again on stop).
 *
 * <p>Config returned (for the default datasource; with init arg {@value #DATASOURCE} the keys are
 * {@code quarkus.datasource."<name>".*}):
 * <ul>
 *   <li>{@code quarkus.datasource.username} / {@code quarkus.datasource.password}</li>
 *   <li>{@code quarkus.datasource.reactive.url} = {@code postgresql://127.0.0.1:<port>/test_<n>}</li>
 *   <li>{@code quarkus.datasource.jdbc.url} = {@code jdbc:postgresql://127.0.0.1:<port>/test_<n>} — returned even
 *       without the JDBC (Agroal) extension, since applications read it themselves (e.g. to run Flyway over plain
 *       JDBC); Quarkus then logs an "Unrecognized configuration key" warning, harmless. Init arg
 *       {@value #JDBC} = {@code false} leaves it out.</li>
 * </ul>
 * Left out on purpose: {@code quarkus.datasource.db-kind} and {@code quarkus.datasource.devservices.enabled}.
 * Both are build-time properties, and Quarkus (3.22+) builds the test application before test resources start,
 * so values returned here are ignored apart from a "build time property cannot be changed" warning. Set them in
 * the application's test configuration instead: {@code quarkus.devservices.enabled=false} (required without
 * Docker, or the build fails looking for a datasource URL) and, if the application has several database
 * extensions, {@code quarkus.datasource.db-kind=postgresql}.
 *
 * <p>Init args: {@value #DATASOURCE} (a named datasource), {@value #JDBC} / {@value #REACTIVE}
 * ({@code false} to leave that URL out; default {@code true}), {@value #PROXIED} ({@code true}: the reactive URL
 * goes through a {@link TcpProxy}, {@link #proxy()}, so a test can take the database away from the application
 * and give it back; the JDBC URL stays direct).
 */
public class PostgresResource implements QuarkusTestResourceLifecycleManager {

    public static final String DATASOURCE = "datasource";
    public static final String JDBC = "jdbc";
    public static final String REACTIVE = "reactive";
    public static final String PROXIED = "proxied";

    private static volatile TcpProxy proxy;

    private String datasource;
    private boolean jdbc = true;
    private boolean reactive = true;
    private boolean proxied;
    private String database;

    /** The proxy in front of the reactive URL of the resource started last with {@value #PROXIED}; null without. */
    public static TcpProxy proxy() {
        return proxy;
    }

    /** JDBC URL of a database on the JVM's shared server (starting it if needed), e.g. {@link #database()}. */
    public static String jdbcUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:" + SharedInfrastructure.postgresCoordinates()[0] + "/" + database;
    }

    /** Reactive URL ({@code postgresql://127.0.0.1:<port>/<database>}) on the JVM's shared server. */
    public static String reactiveUrl(String database) {
        return "postgresql://127.0.0.1:" + SharedInfrastructure.postgresCoordinates()[0] + "/" + database;
    }

    /** Superuser name of the shared server. */
    public static String username() {
        return SharedInfrastructure.postgresCoordinates()[1];
    }

    /** Password to configure (local connections are trusted; the server ignores it). */
    public static String password() {
        return SharedInfrastructure.postgresCoordinates()[2];
    }

    /** Creates another fresh database on the shared server and returns its name. */
    public static String createDatabase() {
        return SharedInfrastructure.postgresCreateDatabase();
    }

    @Override
    public void init(Map<String, String> initArgs) {
        String name = initArgs.get(DATASOURCE);
        datasource = name == null || name.isBlank() ? null : name.trim();
        jdbc = !"false".equalsIgnoreCase(initArgs.getOrDefault(JDBC, "true").trim());
        reactive = !"false".equalsIgnoreCase(initArgs.getOrDefault(REACTIVE, "true").trim());
        proxied = "true".equalsIgnoreCase(initArgs.getOrDefault(PROXIED, "false").trim());
    }

    @Override
    public Map<String, String> start() {
        database = SharedInfrastructure.postgresCreateDatabase();
        String prefix = datasource == null ? "quarkus.datasource." : "quarkus.datasource.\"" + datasource + "\".";
        Map<String, String> config = new LinkedHashMap<>();
        config.put(prefix + "username", username());
        config.put(prefix + "password", password());
        if (reactive && proxied) {
            TcpProxy started = TcpProxy.start("127.0.0.1", Integer.parseInt(SharedInfrastructure.postgresCoordinates()[0]));
            proxy = started;
            config.put(prefix + "reactive.url", "postgresql://127.0.0.1:" + started.port() + "/" + database);
        } else if (reactive) {
            config.put(prefix + "reactive.url", reactiveUrl(database));
        }
        if (jdbc) {
            config.put(prefix + "jdbc.url", jdbcUrl(database));
        }
        return config;
    }

    /** The database created by the last {@link #start()} of this resource instance ({@code null} after stop). */
    public String database() {
        return database;
    }

    /** Drops this start's database (the application is already stopped); the server stays for the next class. */
    @Override
    public void stop() {
        TcpProxy started = proxy;
        if (proxied && started != null) {
            started.close();
            proxy = null;
        }
        String db = database;
        database = null;
        if (db != null) {
            try {
                SharedInfrastructure.postgresDropDatabase(db);
            } catch (RuntimeException ignored) {
                // best effort: the server and its data directory go away with the JVM anyway
            }
        }
    }
}
