package io.csiorchestrator.claims.messaging;

/** A record of a stale lease epoch: dead-lettered at once with the reason, never retried ({@link Retries}). */
final class StaleEpochException extends RuntimeException {

    StaleEpochException(String reason) {
        super(reason, null, false, false);
    }
}
