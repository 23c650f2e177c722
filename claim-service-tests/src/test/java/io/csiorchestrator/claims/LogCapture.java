package io.csiorchestrator.claims;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.jboss.logmanager.ExtLogRecord;

/**
 * Every log line of the running application while open (root logger, all levels): logger name, the
 * formatted message, the trace id of its logging context ({@code traceId=...}, when it has one), its parameters and
 * any stack trace, as one string per record.
 */
public final class LogCapture extends Handler implements AutoCloseable {

    private final List<String> lines = Collections.synchronizedList(new ArrayList<>());

    private LogCapture() {
        setLevel(Level.ALL);
    }

    public static LogCapture start() {
        LogCapture capture = new LogCapture();
        Logger.getLogger("").addHandler(capture);
        return capture;
    }

    /** The lines captured so far. */
    public List<String> lines() {
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }

    @Override
    public void publish(LogRecord record) {
        StringBuilder line = new StringBuilder(String.valueOf(record.getLoggerName())).append(' ');
        line.append(record instanceof ExtLogRecord ext ? ext.getFormattedMessage() : record.getMessage());
        if (record instanceof ExtLogRecord ext && ext.getMdc("traceId") != null) {
            line.append(" traceId=").append(ext.getMdc("traceId"));
        }
        if (record.getParameters() != null) {
            for (Object p : record.getParameters()) {
                line.append(' ').append(p);
            }
        }
        if (record.getThrown() != null) {
            StringWriter trace = new StringWriter();
            record.getThrown().printStackTrace(new PrintWriter(trace));
            line.append(' ').append(trace);
        }
        lines.add(line.toString());
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        Logger.getLogger("").removeHandler(this);
    }
}
