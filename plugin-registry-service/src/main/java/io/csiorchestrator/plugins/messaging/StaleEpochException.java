package io.csiorchestrator.plugins.messaging;

/**
 * A report sent under an older lease epoch than its node's current one: ignored and dead-lettered with the reason
 * ("stale lease epoch 2 < 3 for node-1") as its {@code dead-letter-reason}.
 */
public class StaleEpochException extends RuntimeException {

    public StaleEpochException(String reason) {
        super(reason, null, false, false);
    }
}
