package io.csiorchestrator.worker.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** {@link BrokerContact}: contact judged from the count of answered fetches, on a clock the test moves. */
class BrokerContactTest {

    static final long S = 1_000_000_000L;
    static final Instant T0 = Instant.parse("2026-11-30T10:00:00Z");

    @Test
    void answeredFetchesKeepContactAndSilenceLongerThanTheLimitLosesIt() {
        BrokerContact contact = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(contact.observe(0, 0, 5 * S, T0.plusSeconds(5)), "within the limit of the start");
        assertNull(contact.observe(1, 0, 10 * S, T0.plusSeconds(10)), "a fetch answered");
        assertEquals(T0.plusSeconds(10), contact.lastAnswer());
        assertNull(contact.observe(1, 0, 25 * S, T0.plusSeconds(25)), "15 s silent: not more than the limit yet");
        String lost = contact.observe(1, 0, 26 * S, T0.plusSeconds(26));
        assertNotNull(lost, "16 s without an answered fetch");
        assertTrue(lost.contains("no fetch for 16 s") && lost.contains(T0.plusSeconds(10).toString()), lost);
        assertNull(contact.observe(2, 0, 27 * S, T0.plusSeconds(27)), "the next answered fetch brings it back");
    }

    @Test
    void theLoopsFailureStaysTheFailureBeforeAndAfterTheSilenceUntilAFetchIsAnsweredAfterIt() {
        BrokerContact contact = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(contact.observe(3, 0, 5 * S, T0.plusSeconds(5)));
        String failed = "TimeoutException: Timeout of 10000ms expired before the offsets could be committed";
        contact.loopFailed(failed, 0);
        assertEquals(failed, contact.observe(3, 0, 10 * S, T0.plusSeconds(10)), "within the silence limit: the failure");
        assertEquals(failed, contact.observe(3, 0, 30 * S, T0.plusSeconds(30)), "past it: still the failure, not the silence");
        assertNull(contact.observe(4, 0, 35 * S, T0.plusSeconds(35)), "a fetch answered after it ends it");
        assertNotNull(contact.observe(4, 0, 51 * S, T0.plusSeconds(51)), "then only the silence counts");
    }

    @Test
    void aRefusedLoginStaysTheFailureWhileFetchesAreAnsweredUntilALoginSucceedsAfterIt() {
        BrokerContact contact = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(contact.observe(3, 2, 5 * S, T0.plusSeconds(5)));
        String refused = "SaslAuthenticationException: Authentication failed during authentication due to invalid"
                + " credentials with SASL mechanism SCRAM-SHA-512";
        contact.loopFailed(refused, 2);
        // the connections made before the revocation keep answering fetches until they must log in again
        assertEquals(refused, contact.observe(4, 2, 10 * S, T0.plusSeconds(10)), "an answered fetch: still refused");
        assertEquals(refused, contact.observe(9, 2, 60 * S, T0.plusSeconds(60)), "a minute of answered fetches");
        assertEquals(refused, contact.observe(9, 2, 90 * S, T0.plusSeconds(90)), "then silence: still the refusal");
        assertNull(contact.observe(10, 3, 95 * S, T0.plusSeconds(95)), "a login accepted after it (a broker that"
                + " refused while loading its users) ends it");
    }

    @Test
    void aCountAlreadyThereWhenWatchingBeginsIsAnAnswerButAnUnchangedCountIsNot() {
        BrokerContact contact = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(contact.observe(7, 0, 20 * S, T0.plusSeconds(20)), "fetches answered since the start");
        assertEquals(T0.plusSeconds(20), contact.lastAnswer());
        assertNotNull(contact.observe(7, 0, 36 * S, T0.plusSeconds(36)), "the same count 16 s later");
        BrokerContact idle = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(idle.observe(0, 0, 1 * S, T0.plusSeconds(1)));
        assertNotNull(idle.observe(0, 0, 16 * S, T0.plusSeconds(16)), "never a fetch answered since the start");
    }
}
