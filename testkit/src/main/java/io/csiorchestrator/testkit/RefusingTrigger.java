package io.csiorchestrator.testkit;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * A real, non-transient failure of one record's handling, for tests of retry budgets and dead letters: a PostgreSQL
 * trigger that makes every write of the rows whose {@code column} equals {@code value} fail with a plain error
 * (SQLSTATE P0001, "{@code message} <value>", not the database being away), and counts each attempt in a sequence,
 * which the failed transaction's rollback does not undo. Installed through its own JDBC connection (the test
 * database's credentials), dropped on {@link #close()}.
 */
public final class RefusingTrigger implements AutoCloseable {

    private final Connection db;
    private final String table;
    private final String name;
    private final String attempts;

    private RefusingTrigger(Connection db, String table, String name, String attempts) {
        this.db = db;
        this.table = table;
        this.name = name;
        this.attempts = attempts;
    }

    /**
     * @param events  the trigger's events, e.g. {@code INSERT} or {@code INSERT OR UPDATE}
     * @param message the error's text before the refused value
     */
    public static RefusingTrigger install(String jdbcUrl, String table, String events, String column, String value,
                                          String message) throws SQLException {
        String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        String name = "refuse_" + suffix;
        String attempts = "refuse_attempts_" + suffix;
        java.util.Properties login = new java.util.Properties();
        login.setProperty("user", PostgresResource.username());
        login.setProperty("password", PostgresResource.password());
        // the driver itself, not DriverManager: under a Quarkus test's class loader DriverManager may not see it
        Connection db = new org.postgresql.Driver().connect(jdbcUrl, login);
        try (Statement sql = db.createStatement()) {
            sql.execute("CREATE SEQUENCE " + attempts);
            sql.execute("CREATE FUNCTION " + name + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " IF NEW." + column + " = " + literal(value) + " THEN"
                    + " PERFORM nextval('" + attempts + "');"
                    + " RAISE EXCEPTION " + literal(message + " %") + ", NEW." + column + ";"
                    + " END IF; RETURN NEW; END $$");
            sql.execute("CREATE TRIGGER " + name + " BEFORE " + events + " ON " + table
                    + " FOR EACH ROW EXECUTE FUNCTION " + name + "()");
        } catch (SQLException e) {
            db.close();
            throw e;
        }
        return new RefusingTrigger(db, table, name, attempts);
    }

    /** How many writes of the refused rows were tried so far. */
    public long attempts() throws SQLException {
        try (Statement sql = db.createStatement();
             ResultSet rs = sql.executeQuery("SELECT last_value, is_called FROM " + attempts)) {
            rs.next();
            return rs.getBoolean(2) ? rs.getLong(1) : 0;
        }
    }

    @Override
    public void close() throws SQLException {
        try (Statement sql = db.createStatement()) {
            sql.execute("DROP TRIGGER " + name + " ON " + table);
            sql.execute("DROP FUNCTION " + name + "()");
            sql.execute("DROP SEQUENCE " + attempts);
        } finally {
            db.close();
        }
    }

    private static String literal(String text) {
        return "'" + text.replace("'", "''") + "'";
    }
}
