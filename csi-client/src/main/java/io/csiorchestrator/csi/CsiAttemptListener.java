package io.csiorchestrator.csi;

/**
 * Told about every attempt of every CSI call, after the attempt ended. Metrics and tests use it.
 * Called on gRPC or timer threads: keep it quick and thread-safe.
 */
@FunctionalInterface
public interface CsiAttemptListener {

    CsiAttemptListener NONE = attempt -> {
    };

    void onAttempt(CsiAttempt attempt);
}
