package io.csiorchestrator.csi;

import io.grpc.Status;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CsiRetryPolicyTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    @Test
    void defaultsFollowTheCsiRules() {
        CsiRetryPolicy policy = CsiRetryPolicy.defaults();
        assertEquals(3, policy.maxAttempts());
        assertEquals(Duration.ofMillis(100), policy.initialBackoff());
        assertEquals(Duration.ofMinutes(2), policy.perAttemptTimeout());
        assertEquals(Set.of(Status.Code.UNAVAILABLE, Status.Code.RESOURCE_EXHAUSTED,
                Status.Code.DEADLINE_EXCEEDED, Status.Code.ABORTED), policy.retryableCodes());
    }

    @ParameterizedTest
    @EnumSource(Status.Code.class)
    void onlyUnavailableResourceExhaustedDeadlineAndAbortedAreRetried(Status.Code code) {
        boolean expected = code == Status.Code.UNAVAILABLE || code == Status.Code.RESOURCE_EXHAUSTED
                || code == Status.Code.DEADLINE_EXCEEDED || code == Status.Code.ABORTED;
        assertEquals(expected, CsiRetryPolicy.defaults().isRetryable(code), code.name());
    }

    @Test
    void backoffDoublesFromTheInitialDelayUpToTheCap() {
        CsiRetryPolicy policy = CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(100), Duration.ofMillis(500));
        assertEquals(Duration.ofMillis(100), policy.backoffAfterAttempt(1));
        assertEquals(Duration.ofMillis(200), policy.backoffAfterAttempt(2));
        assertEquals(Duration.ofMillis(400), policy.backoffAfterAttempt(3));
        assertEquals(Duration.ofMillis(500), policy.backoffAfterAttempt(4));
        assertEquals(Duration.ofMillis(500), policy.backoffAfterAttempt(60));
    }

    @Test
    void nextDelayStopsOnSuccessOnFatalCodesAndAfterTheLastAttempt() {
        CsiRetryPolicy policy = CsiRetryPolicy.defaults();
        assertEquals(Optional.of(Duration.ofMillis(100)), policy.nextDelay(1, Status.Code.UNAVAILABLE));
        assertEquals(Optional.of(Duration.ofMillis(200)), policy.nextDelay(2, Status.Code.ABORTED));
        assertEquals(Optional.empty(), policy.nextDelay(3, Status.Code.UNAVAILABLE));
        assertEquals(Optional.empty(), policy.nextDelay(1, Status.Code.UNIMPLEMENTED));
        assertEquals(Optional.empty(), policy.nextDelay(1, Status.Code.FAILED_PRECONDITION));
        assertEquals(Optional.empty(), policy.nextDelay(1, Status.Code.OK));
    }

    @Test
    void rejectsNonsense() {
        assertThrows(IllegalArgumentException.class, () -> CsiRetryPolicy.defaults().withMaxAttempts(0));
        assertThrows(IllegalArgumentException.class,
                () -> CsiRetryPolicy.defaults().withBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class,
                () -> CsiRetryPolicy.defaults().withPerAttemptTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class,
                () -> CsiRetryPolicy.defaults().withRetryableCodes(Set.of(Status.Code.UNIMPLEMENTED)));
    }

    @Test
    void twoUnavailableThenOkSucceedsOnTheThirdAttemptWithGrowingDelays() {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        AtomicInteger sent = new AtomicInteger();
        CsiRetryPolicy policy = CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(5), Duration.ofSeconds(1));

        String result = policy.run(CsiRpc.NODE_PUBLISH_VOLUME,
                        number -> sent.incrementAndGet() <= 2
                                ? Uni.createFrom().failure(Status.UNAVAILABLE.withDescription("down").asRuntimeException())
                                : Uni.createFrom().item("published"),
                        attempts::add)
                .await().atMost(WAIT);

        assertEquals("published", result);
        assertEquals(3, sent.get());
        assertEquals(List.of(1, 2, 3), attempts.stream().map(CsiAttempt::number).toList());
        assertEquals(List.of(Status.Code.UNAVAILABLE, Status.Code.UNAVAILABLE, Status.Code.OK),
                attempts.stream().map(CsiAttempt::outcome).toList());
        assertEquals(Optional.of(Duration.ofMillis(5)), attempts.get(0).delayBeforeNext());
        assertEquals(Optional.of(Duration.ofMillis(10)), attempts.get(1).delayBeforeNext());
        assertTrue(attempts.get(2).succeeded());
        assertFalse(attempts.get(2).willRetry());
    }

    /**
     * Each attempt's {@code elapsed()} covers that attempt only, not the backoff before it. No fixed
     * time bound: the test notes {@code System.nanoTime()} when it starts the call and when each attempt
     * is reported, and checks that each reported duration fits in the window the test saw around that
     * attempt. The second attempt is subscribed only after the backoff that follows the first report,
     * so its window is the gap between the two reports less the policy's configured backoff. The second
     * attempt's own 120 ms delay is its lower bound.
     */
    @Test
    void eachAttemptReportsHowLongItTookWithoutTheBackoff() {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        List<Long> reportedAt = new CopyOnWriteArrayList<>();
        List<String> events = new CopyOnWriteArrayList<>();
        AtomicInteger sent = new AtomicInteger();
        CsiRetryPolicy policy = CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(300), Duration.ofSeconds(1));
        Duration backoff = policy.backoffAfterAttempt(1);

        long callStarted = System.nanoTime();
        policy.run(CsiRpc.NODE_STAGE_VOLUME,
                        number -> {
                            events.add("send " + number);
                            return sent.incrementAndGet() == 1
                                    ? Uni.createFrom().<String>failure(Status.UNAVAILABLE.asRuntimeException())
                                    : Uni.createFrom().item("staged").onItem().delayIt().by(Duration.ofMillis(120));
                        },
                        attempt -> {
                            reportedAt.add(System.nanoTime());
                            events.add("report " + attempt.number());
                            attempts.add(attempt);
                        })
                .await().atMost(WAIT);

        assertEquals(List.of("send 1", "report 1", "send 2", "report 2"), events,
                "each attempt is reported when it ends, before the backoff and the next attempt");
        assertEquals(2, attempts.size());
        Duration firstWindow = Duration.ofNanos(reportedAt.get(0) - callStarted);
        assertTrue(attempts.get(0).elapsed().compareTo(firstWindow) <= 0,
                "the first attempt fits between the call's start and its report: " + attempts.get(0).elapsed()
                        + " > " + firstWindow);
        Duration secondWindow = Duration.ofNanos(reportedAt.get(1) - reportedAt.get(0)).minus(backoff);
        assertTrue(attempts.get(1).elapsed().compareTo(secondWindow) <= 0,
                "the second attempt leaves out the " + backoff + " backoff before it: " + attempts.get(1).elapsed()
                        + " > " + secondWindow);
        assertTrue(attempts.get(1).elapsed().compareTo(Duration.ofMillis(120)) >= 0,
                "the second attempt took at least its 120 ms: " + attempts.get(1).elapsed());
        assertEquals(Duration.ZERO, new CsiAttempt(CsiRpc.PROBE, 1, Status.Code.OK, Optional.empty()).elapsed(),
                "the four-argument constructor still works");
    }

    @Test
    void unimplementedIsTriedExactlyOnce() {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        AtomicInteger sent = new AtomicInteger();

        Throwable failure = assertThrows(Throwable.class, () -> CsiRetryPolicy.defaults()
                .run(CsiRpc.NODE_STAGE_VOLUME, number -> {
                    sent.incrementAndGet();
                    return Uni.createFrom().failure(Status.UNIMPLEMENTED.asRuntimeException());
                }, attempts::add)
                .await().atMost(WAIT));

        assertEquals(Status.Code.UNIMPLEMENTED, CsiRetryPolicy.codeOf(failure));
        assertEquals(1, sent.get());
        assertEquals(1, attempts.size());
        assertFalse(attempts.get(0).willRetry());
    }

    @Test
    void givesUpAfterMaxAttemptsWithTheLastFailure() {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        CsiRetryPolicy policy = CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(1), Duration.ofMillis(4));

        Throwable failure = assertThrows(Throwable.class, () -> policy
                .run(CsiRpc.CONTROLLER_PUBLISH_VOLUME,
                        number -> Uni.createFrom().failure(Status.RESOURCE_EXHAUSTED
                                .withDescription("attempt " + number).asRuntimeException()),
                        attempts::add)
                .await().atMost(WAIT));

        assertEquals(Status.Code.RESOURCE_EXHAUSTED, CsiRetryPolicy.codeOf(failure));
        assertEquals("attempt 3", Status.fromThrowable(failure).getDescription());
        assertEquals(3, attempts.size());
        assertEquals(Optional.empty(), attempts.get(2).delayBeforeNext());
    }

    @Test
    void abortedIsRetriedWithBackoff() {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        AtomicInteger sent = new AtomicInteger();
        CsiRetryPolicy policy = CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(1), Duration.ofMillis(4));

        Integer result = policy.run(CsiRpc.NODE_STAGE_VOLUME,
                        number -> sent.incrementAndGet() == 1
                                ? Uni.createFrom().failure(Status.ABORTED.asRuntimeException())
                                : Uni.createFrom().item(number),
                        attempts::add)
                .await().atMost(WAIT);

        assertEquals(2, result);
        assertEquals(Status.Code.ABORTED, attempts.get(0).outcome());
        assertTrue(attempts.get(0).willRetry());
    }

    @Test
    void eachSubscriptionIsANewCallWithItsOwnAttemptCount() {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        Uni<String> call = CsiRetryPolicy.defaults().run(CsiRpc.PROBE, number -> Uni.createFrom().item("ok"),
                attempts::add);

        call.await().atMost(WAIT);
        call.await().atMost(WAIT);

        assertEquals(List.of(1, 1), attempts.stream().map(CsiAttempt::number).toList());
    }

    @Test
    void failuresWithoutStatusCountAsUnknownAndAreNotRetried() {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        assertThrows(IllegalStateException.class, () -> CsiRetryPolicy.defaults()
                .run(CsiRpc.PROBE, number -> Uni.createFrom().<String>failure(new IllegalStateException("boom")),
                        attempts::add)
                .await().atMost(WAIT));
        assertEquals(1, attempts.size());
        assertEquals(Status.Code.UNKNOWN, attempts.get(0).outcome());
    }

    /**
     * FAILED_PRECONDITION from NodeExpandVolume is never retried, even under a policy whose codes include
     * FAILED_PRECONDITION (the CSI spec: the CO MUST NOT retry it): one attempt, reported with no next
     * delay. The same policy retries NodeStageVolume's FAILED_PRECONDITION (3 attempts), and
     * NodeExpandVolume's ABORTED is retried like any call's.
     */
    @Test
    void nodeExpandVolumeFailedPreconditionIsNeverRetriedWhateverThePolicysCodes() {
        CsiRetryPolicy policy = CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
                .withRetryableCodes(Set.of(Status.Code.FAILED_PRECONDITION, Status.Code.ABORTED));
        assertEquals(1, attemptsUntilFailure(policy, CsiRpc.NODE_EXPAND_VOLUME, Status.FAILED_PRECONDITION));
        assertEquals(3, attemptsUntilFailure(policy, CsiRpc.NODE_STAGE_VOLUME, Status.FAILED_PRECONDITION));
        assertEquals(3, attemptsUntilFailure(policy, CsiRpc.NODE_EXPAND_VOLUME, Status.ABORTED));
        assertEquals(Optional.empty(), policy.nextDelay(CsiRpc.NODE_EXPAND_VOLUME, 1, Status.Code.FAILED_PRECONDITION));
        assertTrue(CsiRetryPolicy.neverRetried(CsiRpc.NODE_EXPAND_VOLUME, Status.Code.FAILED_PRECONDITION));
        assertFalse(CsiRetryPolicy.neverRetried(CsiRpc.CONTROLLER_EXPAND_VOLUME, Status.Code.ABORTED));
    }

    private static int attemptsUntilFailure(CsiRetryPolicy policy, CsiRpc rpc, Status status) {
        List<CsiAttempt> attempts = new CopyOnWriteArrayList<>();
        assertThrows(RuntimeException.class, () -> policy.<String>run(rpc,
                n -> Uni.createFrom().failure(status.asRuntimeException()), attempts::add).await().atMost(WAIT));
        assertTrue(attempts.get(attempts.size() - 1).delayBeforeNext().isEmpty(), "the last attempt has no next delay");
        return attempts.size();
    }
}
