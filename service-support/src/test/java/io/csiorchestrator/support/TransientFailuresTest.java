package io.csiorchestrator.support;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import java.net.ConnectException;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class TransientFailuresTest {

    private static PgException pg(String sqlState) {
        return new PgException("server says", "FATAL", sqlState, null);
    }

    @Test
    void theDatabaseBeingAwayIsTransientAlsoWhenWrapped() {
        assertTrue(TransientFailures.isTransient(ClosedConnectionException.INSTANCE));
        assertTrue(TransientFailures.isTransient(new CompletionException(new ConnectException("Connection refused"))));
        assertTrue(TransientFailures.isTransient(new CompletionException("flush failed", pg("57P01")))); // admin shutdown
        assertTrue(TransientFailures.isTransient(pg("08006"))); // connection failure
        assertTrue(TransientFailures.isTransient(pg("53300"))); // too many connections
        assertTrue(TransientFailures.isTransient(pg("40001"))); // serialization failure
        assertTrue(TransientFailures.isTransient(pg("40P01"))); // deadlock
        assertTrue(TransientFailures.isTransient(pg("25006"))); // read-only: a standby during failover
    }

    @Test
    void whatRetryingCannotFixIsNot() {
        assertFalse(TransientFailures.isTransient(pg("23505"))); // unique violation
        assertFalse(TransientFailures.isTransient(pg("42P01"))); // undefined table
        assertFalse(TransientFailures.isTransient(pg("22001"))); // value too long
        assertFalse(TransientFailures.isTransient(new IllegalStateException("a bug")));
        assertFalse(TransientFailures.isTransient(new CompletionException("mapping", new NullPointerException())));
        assertFalse(TransientFailures.isTransient(null));
    }
}
