package io.csiorchestrator.csi;

import io.grpc.Status;
import io.smallrye.mutiny.Uni;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * How a CSI call is retried: which codes, how often, how long each attempt may take and how
 * long to wait between attempts. The defaults follow the CSI rules for the orchestrator side:
 * UNAVAILABLE, RESOURCE_EXHAUSTED, a per-attempt DEADLINE_EXCEEDED and ABORTED are retried with
 * exponential backoff from 100 ms, 3 attempts, 2 minutes per attempt; UNIMPLEMENTED and every
 * other code fail at once. Whatever the codes, a few (call, code) pairs are never retried because
 * the CSI spec forbids it ({@link #neverRetried}): FAILED_PRECONDITION from NodeExpandVolume.
 *
 * @param maxAttempts       attempts in all, at least 1
 * @param initialBackoff    the wait after the first failed attempt
 * @param maxBackoff        the longest wait between two attempts
 * @param backoffMultiplier how much each wait grows over the previous one, at least 1
 * @param perAttemptTimeout the deadline of each attempt
 * @param retryableCodes    the status codes that are retried
 */
public record CsiRetryPolicy(
        int maxAttempts,
        Duration initialBackoff,
        Duration maxBackoff,
        double backoffMultiplier,
        Duration perAttemptTimeout,
        Set<Status.Code> retryableCodes) {

    public static final Set<Status.Code> DEFAULT_RETRYABLE_CODES = Set.copyOf(EnumSet.of(
            Status.Code.UNAVAILABLE,
            Status.Code.RESOURCE_EXHAUSTED,
            Status.Code.DEADLINE_EXCEEDED,
            Status.Code.ABORTED));

    public CsiRetryPolicy {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, got " + maxAttempts);
        }
        requirePositive("initialBackoff", initialBackoff);
        requirePositive("maxBackoff", maxBackoff);
        requirePositive("perAttemptTimeout", perAttemptTimeout);
        if (maxBackoff.compareTo(initialBackoff) < 0) {
            throw new IllegalArgumentException("maxBackoff " + maxBackoff + " is shorter than initialBackoff " + initialBackoff);
        }
        if (!(backoffMultiplier >= 1.0) || Double.isInfinite(backoffMultiplier)) {
            throw new IllegalArgumentException("backoffMultiplier must be a finite number >= 1, got " + backoffMultiplier);
        }
        retryableCodes = Set.copyOf(Objects.requireNonNull(retryableCodes, "retryableCodes"));
        if (retryableCodes.contains(Status.Code.OK) || retryableCodes.contains(Status.Code.UNIMPLEMENTED)) {
            throw new IllegalArgumentException("OK and UNIMPLEMENTED can never be retried");
        }
    }

    /** 3 attempts, backoff 100 ms doubling up to 10 s, 2 minutes per attempt. */
    public static CsiRetryPolicy defaults() {
        return new CsiRetryPolicy(3, Duration.ofMillis(100), Duration.ofSeconds(10), 2.0,
                Duration.ofMinutes(2), DEFAULT_RETRYABLE_CODES);
    }

    public CsiRetryPolicy withMaxAttempts(int attempts) {
        return new CsiRetryPolicy(attempts, initialBackoff, maxBackoff, backoffMultiplier, perAttemptTimeout, retryableCodes);
    }

    public CsiRetryPolicy withBackoff(Duration initial, Duration max) {
        return new CsiRetryPolicy(maxAttempts, initial, max, backoffMultiplier, perAttemptTimeout, retryableCodes);
    }

    public CsiRetryPolicy withPerAttemptTimeout(Duration timeout) {
        return new CsiRetryPolicy(maxAttempts, initialBackoff, maxBackoff, backoffMultiplier, timeout, retryableCodes);
    }

    public CsiRetryPolicy withRetryableCodes(Set<Status.Code> codes) {
        return new CsiRetryPolicy(maxAttempts, initialBackoff, maxBackoff, backoffMultiplier, perAttemptTimeout, codes);
    }

    /** Whether a failure with this code is retried at all (attempts left aside). */
    public boolean isRetryable(Status.Code code) {
        return retryableCodes.contains(code);
    }

    /** The gRPC status code of any failure; failures that carry no status count as UNKNOWN. */
    public static Status.Code codeOf(Throwable failure) {
        return Status.fromThrowable(failure).getCode();
    }

    /**
     * The wait after failed attempt {@code attempt} (1-based): the initial backoff, multiplied by
     * the multiplier for each further attempt, capped at the maximum.
     */
    public Duration backoffAfterAttempt(int attempt) {
        if (attempt < 1) {
            throw new IllegalArgumentException("attempts are numbered from 1, got " + attempt);
        }
        double millis = initialBackoff.toMillis() * Math.pow(backoffMultiplier, attempt - 1);
        if (millis >= maxBackoff.toMillis()) {
            return maxBackoff;
        }
        return Duration.ofMillis(Math.round(millis));
    }

    /**
     * Whether the CSI spec forbids retrying {@code rpc} after {@code code}, whatever the policy's codes:
     * NodeExpandVolume's FAILED_PRECONDITION ("the CO MUST NOT retry": the volume is in a state, e.g. not
     * expanded by the controller yet, that a retry of the same call cannot change).
     */
    public static boolean neverRetried(CsiRpc rpc, Status.Code code) {
        return rpc == CsiRpc.NODE_EXPAND_VOLUME && code == Status.Code.FAILED_PRECONDITION;
    }

    /** {@link #nextDelay(int, Status.Code)} for a failure of {@code rpc}, honouring {@link #neverRetried}. */
    public Optional<Duration> nextDelay(CsiRpc rpc, int attempt, Status.Code code) {
        return neverRetried(rpc, code) ? Optional.empty() : nextDelay(attempt, code);
    }

    /** The wait before the next attempt after attempt {@code attempt} failed with {@code code}, or empty to stop. */
    public Optional<Duration> nextDelay(int attempt, Status.Code code) {
        if (code == Status.Code.OK || !isRetryable(code) || attempt >= maxAttempts) {
            return Optional.empty();
        }
        return Optional.of(backoffAfterAttempt(attempt));
    }

    /**
     * Runs a call under this policy. {@code attempt} makes the Uni of attempt n (1-based); it is
     * asked once per attempt, so each attempt gets a fresh deadline. Every attempt is reported to
     * {@code listener}, with its duration (measured from making the attempt's Uni to its outcome). The result fails with the last attempt's failure, wrapped in nothing.
     */
    public <T> Uni<T> run(CsiRpc rpc, IntFunction<Uni<T>> attempt, CsiAttemptListener listener) {
        Objects.requireNonNull(listener, "listener");
        return Uni.createFrom().deferred(() -> {
            AtomicInteger attempts = new AtomicInteger();
            Uni<T> oneAttempt = Uni.createFrom().deferred(() -> {
                int number = attempts.incrementAndGet();
                long started = System.nanoTime();
                return attempt.apply(number)
                        .onItemOrFailure().invoke((item, failure) -> {
                            Duration elapsed = Duration.ofNanos(System.nanoTime() - started);
                            Status.Code code = failure == null ? Status.Code.OK : codeOf(failure);
                            listener.onAttempt(new CsiAttempt(rpc, number, code, nextDelay(rpc, number, code), elapsed));
                        });
            });
            return oneAttempt.onFailure().retry().when(failures -> failures
                    .onItem().transformToUniAndConcatenate(failure -> {
                        Optional<Duration> delay = nextDelay(rpc, attempts.get(), codeOf(failure));
                        if (delay.isEmpty()) {
                            return Uni.createFrom().failure(failure);
                        }
                        return Uni.createFrom().item(attempts.get()).onItem().delayIt().by(delay.get());
                    }));
        });
    }

    private static void requirePositive(String name, Duration value) {
        Objects.requireNonNull(value, name);
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }
}
