package io.csiorchestrator.support;

import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import java.net.ConnectException;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * Which failures of handling a record are the database being away for a while (unreachable,
 * restarting, failing over, out of connections, a conflict worth running again), as opposed to a
 * record that cannot be handled at all. A transient failure is retried for as long as it lasts: the
 * partition waits for the database, and no valid record is dead-lettered by an outage.
 */
public final class TransientFailures {

    /** SQLSTATE classes and codes that say "try again later". */
    private static final Set<String> TRANSIENT_CLASSES = Set.of(
            "08", // connection exception
            "53", // insufficient resources (too many connections, out of memory, disk full)
            "57"); // operator intervention: admin/crash shutdown, cannot connect now, query canceled
    private static final Set<String> TRANSIENT_CODES = Set.of(
            "40001", // serialization failure
            "40P01", // deadlock detected
            "55P03", // lock not available
            "25006"); // read-only transaction: a standby during failover

    private TransientFailures() {
    }

    /** Whether {@code failure}, or any of its causes, is transient. */
    public static boolean isTransient(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof PgException pg) {
                String state = pg.getSqlState();
                if (state != null && (TRANSIENT_CODES.contains(state)
                        || (state.length() == 5 && TRANSIENT_CLASSES.contains(state.substring(0, 2))))) {
                    return true;
                }
            } else if (t instanceof ClosedConnectionException || t instanceof ConnectException
                    || t instanceof java.net.NoRouteToHostException || t instanceof TimeoutException) {
                return true;
            } else if (t.getClass().getName().startsWith("io.netty.channel.") && t.getClass().getSimpleName().contains("Connect")) {
                return true; // netty's AnnotatedConnectException and friends: connection refused
            }
        }
        return false;
    }
}
