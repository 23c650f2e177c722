package io.csiorchestrator.plugins.domain;

import static io.csiorchestrator.plugins.domain.Reports.T0;
import static io.csiorchestrator.plugins.domain.Reports.instance;
import static io.csiorchestrator.plugins.domain.Reports.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.PluginHealth;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class InstanceRulesTest {

    private final InstanceRules rules = new InstanceRules(Duration.ofSeconds(90), Duration.ofHours(1));

    @Test
    void theFirstReportIsAccepted() {
        HealthDecision decision = rules.decide(null, node("p", "n", true, T0), T0.plusMillis(5));
        PluginInstance accepted = assertInstanceOf(HealthDecision.Accepted.class, decision).instance();
        assertEquals(T0, accepted.lastHeartbeat());
        assertEquals(T0.plusMillis(5), accepted.lastReceived());
        assertTrue(accepted.healthy());
    }

    @Test
    void aNewerReportReplacesTheStoredOne() {
        PluginInstance stored = instance(node("p", "n", true, T0), T0);
        HealthDecision decision = rules.decide(stored, node("p", "n", false, T0.plusSeconds(1)), T0.plusSeconds(2));
        PluginInstance accepted = assertInstanceOf(HealthDecision.Accepted.class, decision).instance();
        assertFalse(accepted.healthy());
        assertEquals(T0.plusSeconds(1), accepted.lastHeartbeat());
    }

    @Test
    void anOlderReportNeverOverwritesANewerOne() {
        PluginInstance stored = instance(node("p", "n", false, T0.plusSeconds(10)), T0.plusSeconds(10));
        HealthDecision decision = rules.decide(stored, node("p", "n", true, T0), T0.plusSeconds(11));
        assertEquals(new HealthDecision.Stale(T0.plusSeconds(10)), decision);
    }

    @Test
    void theSameReportAgainIsADuplicateEvenAtNanosecondPrecision() {
        Instant observed = T0.plusNanos(123_456_789);
        PluginInstance stored = instance(node("p", "n", true, observed), T0.plusSeconds(1));
        assertEquals(T0.plusNanos(123_456_000), stored.lastHeartbeat(), "kept to the microsecond, as stored");
        assertInstanceOf(HealthDecision.Duplicate.class, rules.decide(stored, node("p", "n", true, observed), T0.plusSeconds(5)));
    }

    @Test
    void aDifferentReportObservedAtTheSameInstantDoesNotReplaceTheStoredOne() {
        PluginInstance stored = instance(node("p", "n", true, T0), T0);
        assertInstanceOf(HealthDecision.Stale.class, rules.decide(stored, node("p", "n", false, T0), T0.plusSeconds(1)));
    }

    @Test
    void aDuplicateDoesNotReviveASilentInstance() {
        PluginInstance silent = instance(node("p", "n", true, T0), T0).silencedBecause(rules.silenceReason("n"));
        assertInstanceOf(HealthDecision.Duplicate.class, rules.decide(silent, node("p", "n", true, T0), T0.plusSeconds(200)));
    }

    @Test
    void aNewReportRevivesASilentInstance() {
        PluginInstance silent = instance(node("p", "n", true, T0), T0).silencedBecause(rules.silenceReason("n"));
        PluginInstance revived = assertInstanceOf(HealthDecision.Accepted.class,
                rules.decide(silent, node("p", "n", true, T0.plusSeconds(200)), T0.plusSeconds(200))).instance();
        assertTrue(revived.healthy());
        assertNull(revived.silenceReason());
        assertEquals("ok", revived.healthDescription());
    }

    @Test
    void anInstanceTurnsSilentOnlyAfterTheTtl() {
        PluginInstance heard = instance(node("p", "n1", true, T0), T0);
        assertFalse(rules.dueToTurnSilent(heard, T0.plusSeconds(90)), "exactly the TTL is not yet longer than it");
        assertTrue(rules.dueToTurnSilent(heard, T0.plusSeconds(90).plusMillis(1)));

        InstanceRules.SweepResult result = rules.sweep(List.of(heard), T0.plusSeconds(91));
        assertEquals(List.of("n1"), result.silenced());
        assertTrue(result.removed().isEmpty());
        PluginInstance silent = result.kept().get(0);
        assertFalse(silent.healthy());
        assertTrue(silent.reportedHealthy(), "what the worker said is kept");
        assertEquals("no heartbeat from node n1 for more than 90s", silent.healthDescription());
        assertEquals(T0, silent.lastHeartbeat());
    }

    @Test
    void silenceIsMeasuredFromReceiptNotFromTheWorkersClock() {
        // A worker whose clock is an hour behind still counts as heard from when its report arrives.
        PluginInstance skewed = instance(node("p", "n", true, T0.minusSeconds(3600)), T0);
        assertFalse(rules.dueToTurnSilent(skewed, T0.plusSeconds(30)));
    }

    @Test
    void aSilentInstanceIsNotSilencedAgain() {
        PluginInstance silent = instance(node("p", "n", true, T0), T0).silencedBecause(rules.silenceReason("n"));
        InstanceRules.SweepResult result = rules.sweep(List.of(silent), T0.plusSeconds(600));
        assertFalse(result.changed());
        assertEquals(List.of(silent), result.kept());
    }

    @Test
    void instancesSilentForLongerThanTheRemovalDelayAreRemovedAndThePluginWithThem() {
        PluginInstance old = instance(node("p", "n1", false, T0), T0).silencedBecause(rules.silenceReason("n1"));
        PluginInstance recent = instance(node("p", "n2", true, T0.plusSeconds(3000)), T0.plusSeconds(3000));

        InstanceRules.SweepResult partly = rules.sweep(List.of(old, recent), T0.plusSeconds(3601));
        assertEquals(List.of("n1"), partly.removed());
        assertEquals(List.of("n2"), partly.kept().stream().map(PluginInstance::nodeId).toList());
        assertEquals(List.of("n2"), partly.silenced(), "n2 is past the TTL but not the removal delay");
        assertFalse(partly.pluginGone());

        InstanceRules.SweepResult all = rules.sweep(List.of(old), T0.plusSeconds(3601));
        assertTrue(all.pluginGone());
        assertFalse(rules.sweep(List.of(old), T0.plusSeconds(3600)).pluginGone(), "exactly the delay is not longer than it");
    }

    /**
     * One sweep finds an instance past both the TTL and the removal delay, never silenced (the first sweep after the
     * registry caught up with an outage longer than the delay): silenced now, removed by the next sweep, never
     * removed unseen. InstanceExpiryTest's outage case saw it go straight from healthy to removed.
     */
    @Test
    void anInstancePastBothCutoffsIsSilencedFirstAndRemovedByTheNextSweep() {
        PluginInstance quiet = instance(node("p", "n1", true, T0), T0);

        InstanceRules.SweepResult first = rules.sweep(List.of(quiet), T0.plusSeconds(3601));
        assertTrue(first.removed().isEmpty(), "not removed before it was seen silent");
        assertEquals(List.of("n1"), first.silenced());
        assertFalse(first.kept().get(0).healthy());
        assertEquals(rules.silenceReason("n1"), first.kept().get(0).silenceReason());
        assertFalse(first.pluginGone());

        InstanceRules.SweepResult second = rules.sweep(first.kept(), T0.plusSeconds(3602));
        assertEquals(List.of("n1"), second.removed());
        assertTrue(second.pluginGone());
    }

    @Test
    void reportedUnhealthyButHeardFromIsKept() {
        PluginInstance unhealthy = instance(node("p", "n", false, T0), T0);
        InstanceRules.SweepResult result = rules.sweep(List.of(unhealthy), T0.plusSeconds(60));
        assertFalse(result.changed());
    }

    @Test
    void theRemovalDelayMayNotBeShorterThanTheTtl() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new InstanceRules(Duration.ofSeconds(90), Duration.ofSeconds(30)));
        assertEquals("the removal delay (30s) must not be shorter than the instance TTL (90s)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new InstanceRules(Duration.ZERO, Duration.ofHours(1)));
    }

    @Test
    void durationsReadAsOperatorsWriteThem() {
        assertEquals("90s", DurationText.of(Duration.ofSeconds(90)));
        assertEquals("2m", DurationText.of(Duration.ofSeconds(120)));
        assertEquals("1h", DurationText.of(Duration.ofHours(1)));
        assertEquals("1500ms", DurationText.of(Duration.ofMillis(1500)));
    }

    @Test
    void aHeartbeatIsTheSameReport() {
        PluginHealth first = node("p", "n", true, T0);
        PluginHealth later = node("p", "n", true, T0.plusSeconds(30));
        assertTrue(instance(first, T0).sameReportAs(instance(later, T0.plusSeconds(30))));
        assertFalse(instance(first, T0).sameReportAs(instance(node("p", "n", false, T0), T0)));
    }
}
