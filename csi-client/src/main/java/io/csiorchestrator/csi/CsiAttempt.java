package io.csiorchestrator.csi;

import io.grpc.Status;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * One attempt of a CSI call, as the retry policy saw it.
 *
 * @param rpc             the call
 * @param number          1 for the first attempt
 * @param outcome         {@link Status.Code#OK} when the attempt succeeded, else the failure's code
 * @param delayBeforeNext the backoff before the next attempt, or empty when no further attempt follows
 * @param elapsed         how long the attempt took, from sending the request to its answer or failure
 *                        (the backoff before the next attempt not included); what a latency metric records
 */
public record CsiAttempt(CsiRpc rpc, int number, Status.Code outcome, Optional<Duration> delayBeforeNext,
                         Duration elapsed) {

    public CsiAttempt {
        Objects.requireNonNull(elapsed, "elapsed");
    }

    /** An attempt whose duration was not measured ({@link Duration#ZERO}). */
    public CsiAttempt(CsiRpc rpc, int number, Status.Code outcome, Optional<Duration> delayBeforeNext) {
        this(rpc, number, outcome, delayBeforeNext, Duration.ZERO);
    }

    public boolean succeeded() {
        return outcome == Status.Code.OK;
    }

    public boolean willRetry() {
        return delayBeforeNext.isPresent();
    }
}
