package io.csiorchestrator.localinfra;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Lowers the log level of noisy infrastructure loggers in JBoss LogManager (the log manager of Quarkus tests and
 * the SLF4J provider this module brings). Levels set explicitly before are kept. Without JBoss LogManager it
 * does nothing.
 */
public final class QuietLogging {

    static final Map<String, Level> KAFKA = levels(
        "kafka", Level.WARNING,
        "org.apache.kafka", Level.WARNING,
        "state.change.logger", Level.WARNING,
        // Warns on every start of a freshly formatted node that it is writing the bootstrap records.
        "org.apache.kafka.controller.QuorumController", Level.SEVERE);
    static final Map<String, Level> POSTGRES = levels(
        "io.zonky.test.db.postgres", Level.WARNING);

    /** Strong references: a logger's level lives as long as someone holds the logger. */
    private static final Map<String, Logger> HELD = new LinkedHashMap<>();

    private QuietLogging() {
    }

    public static void kafka() {
        apply(KAFKA);
    }

    public static void postgres() {
        apply(POSTGRES);
    }

    private static synchronized void apply(Map<String, Level> levels) {
        try {
            levels.forEach((category, level) -> {
                Logger logger = org.jboss.logmanager.Logger.getLogger(category);
                if (logger.getLevel() == null) {
                    logger.setLevel(level);
                }
                HELD.put(category, logger);
            });
        } catch (LinkageError absent) {
            // JBoss LogManager not on the class path: leave logging as configured.
        }
    }

    private static Map<String, Level> levels(Object... pairs) {
        Map<String, Level> map = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], (Level) pairs[i + 1]);
        }
        return map;
    }
}
