package io.csiorchestrator.hostpath;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** One line per log record on standard error: time, level, logger, message. */
final class PluginLogging {

    private PluginLogging() {
    }

    /**
     * A log manager that ignores the JDK's reset at shutdown, so that what the plugin logs while
     * it stops (unmounting, say) is not lost.
     */
    public static final class ShutdownSafeLogManager extends LogManager {
        @Override
        public void reset() {
            // ignored: the JDK resets logging in a shutdown hook that races the plugin's own
        }

        void resetNow() {
            super.reset();
        }
    }

    /** Call first in main, before anything logs. */
    static void configure() {
        System.setProperty("java.util.logging.manager", ShutdownSafeLogManager.class.getName());
        if (LogManager.getLogManager() instanceof ShutdownSafeLogManager manager) {
            manager.resetNow();
        } else {
            LogManager.getLogManager().reset();
        }
        Logger root = Logger.getLogger("");
        ConsoleHandler handler = new ConsoleHandler();
        handler.setLevel(Level.ALL);
        handler.setFormatter(new Formatter() {
            @Override
            public String format(LogRecord record) {
                String name = record.getLoggerName() == null ? "" : record.getLoggerName();
                String shortName = name.substring(name.lastIndexOf('.') + 1);
                StringBuilder line = new StringBuilder()
                        .append(Instant.ofEpochMilli(record.getMillis())).append(' ')
                        .append(record.getLevel().getName()).append(' ')
                        .append('[').append(shortName).append("] ")
                        .append(formatMessage(record)).append('\n');
                if (record.getThrown() != null) {
                    StringWriter trace = new StringWriter();
                    record.getThrown().printStackTrace(new PrintWriter(trace));
                    line.append(trace);
                }
                return line.toString();
            }
        });
        root.addHandler(handler);
        root.setLevel(Level.INFO);
        Logger.getLogger("io.grpc").setLevel(Level.WARNING);
        Logger.getLogger("io.netty").setLevel(Level.WARNING);
    }
}
