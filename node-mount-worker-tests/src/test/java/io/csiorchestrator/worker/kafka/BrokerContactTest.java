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
        assertNull(contact.observe(0, 5 * S, T0.plusSeconds(5)), "within the limit of the start");
        assertNull(contact.observe(1, 10 * S, T0.plusSeconds(10)), "a fetch answered");
        assertEquals(T0.plusSeconds(10), contact.lastAnswer());
        assertNull(contact.observe(1, 25 * S, T0.plusSeconds(25)), "15 s silent: not more than the limit yet");
        String lost = contact.observe(1, 26 * S, T0.plusSeconds(26));
        assertNotNull(lost, "16 s without an answered fetch");
        assertTrue(lost.contains("no fetch for 16 s") && lost.contains(T0.plusSeconds(10).toString()), lost);
        assertNull(contact.observe(2, 27 * S, T0.plusSeconds(27)), "the next answered fetch brings it back");
    }

    @Test
    void theLoopsFailureStaysTheFailureBeforeAndAfterTheSilenceUntilAFetchIsAnsweredAfterIt() {
        BrokerContact contact = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(contact.observe(3, 5 * S, T0.plusSeconds(5)));
        String refused = "SaslAuthenticationException: token revoked";
        contact.loopFailed(refused);
        assertEquals(refused, contact.observe(3, 10 * S, T0.plusSeconds(10)), "within the silence limit: the refusal");
        assertEquals(refused, contact.observe(3, 30 * S, T0.plusSeconds(30)), "past it: still the refusal, not the silence");
        assertNull(contact.observe(4, 35 * S, T0.plusSeconds(35)), "a fetch answered after it ends it");
        assertNotNull(contact.observe(4, 51 * S, T0.plusSeconds(51)), "then only the silence counts");
    }

    @Test
    void aCountAlreadyThereWhenWatchingBeginsIsAnAnswerButAnUnchangedCountIsNot() {
        BrokerContact contact = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(contact.observe(7, 20 * S, T0.plusSeconds(20)), "fetches answered since the start");
        assertEquals(T0.plusSeconds(20), contact.lastAnswer());
        assertNotNull(contact.observe(7, 36 * S, T0.plusSeconds(36)), "the same count 16 s later");
        BrokerContact idle = new BrokerContact(Duration.ofSeconds(15), 0, T0);
        assertNull(idle.observe(0, 1 * S, T0.plusSeconds(1)));
        assertNotNull(idle.observe(0, 16 * S, T0.plusSeconds(16)), "never a fetch answered since the start");
    }
}
