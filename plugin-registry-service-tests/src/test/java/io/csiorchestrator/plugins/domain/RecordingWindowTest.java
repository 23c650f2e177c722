package io.csiorchestrator.plugins.domain;

import static io.csiorchestrator.plugins.domain.Reports.T0;
import static io.csiorchestrator.plugins.domain.Reports.instance;
import static io.csiorchestrator.plugins.domain.Reports.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The arithmetic of the time on which silence is measured: a table of event sequences and the cutoff they give. */
class RecordingWindowTest {

    private static final Duration TTL = Duration.ofSeconds(90);

    /**
     * @param name     what happened to the registry
     * @param events   applied in order to a registry started at T0
     * @param expected the TTL's cutoff: instances last received before it are silent (null: none is)
     */
    record Case(String name, List<UnaryOperator<RecordingWindow>> events, Instant expected) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static UnaryOperator<RecordingWindow> caughtUp(int second) {
        return w -> w.caughtUp(T0.plusSeconds(second));
    }

    private static UnaryOperator<RecordingWindow> interrupted(int second) {
        return w -> w.interrupted(T0.plusSeconds(second));
    }

    static Stream<Case> cases() {
        return Stream.of(
                new Case("just started, not caught up yet: nothing expires", List.of(), null),
                new Case("caught up once: the window has no length yet", List.of(caughtUp(1)), null),
                new Case("caught up for exactly the TTL: not longer than it", List.of(caughtUp(1), caughtUp(91)), null),
                new Case("caught up for longer than the TTL: the usual cutoff",
                        List.of(caughtUp(1), caughtUp(92)), T0.plusSeconds(2)),
                new Case("the database went away (a report failed): nothing expires during the outage",
                        List.of(caughtUp(1), caughtUp(200), interrupted(201)), null),
                new Case("a sample read before the interruption does not reopen the window",
                        List.of(caughtUp(1), caughtUp(200), interrupted(201), caughtUp(200)), null),
                new Case("caught up again after a 10 min outage: every instance gets a whole TTL from then",
                        List.of(caughtUp(1), caughtUp(200), interrupted(201), caughtUp(800), caughtUp(890)), null),
                new Case("a whole TTL after catching up again: silence counted from the catch-up",
                        List.of(caughtUp(1), caughtUp(200), interrupted(201), caughtUp(800), caughtUp(891)),
                        T0.plusSeconds(801)),
                new Case("a lagging consumer: the cutoff stays where the registry is known to be caught up",
                        List.of(caughtUp(1), caughtUp(200)), T0.plusSeconds(110)),
                new Case("an older sample arriving late never moves the window back",
                        List.of(caughtUp(1), caughtUp(200), caughtUp(150)), T0.plusSeconds(110)),
                new Case("interruptions reported out of order keep the latest",
                        List.of(interrupted(300), interrupted(250), caughtUp(280), caughtUp(400)), null),
                new Case("a sample read at the instant of the interruption does not count",
                        List.of(interrupted(300), caughtUp(300), caughtUp(391)), null));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theTtlsCutoffCountsOnlyTimeInWhichTheRegistryCouldRecord(Case c) {
        RecordingWindow window = RecordingWindow.startedAt(T0);
        for (UnaryOperator<RecordingWindow> event : c.events()) {
            window = event.apply(window);
        }
        assertEquals(Optional.ofNullable(c.expected()), window.receivedBefore(TTL), window.toString());
    }

    @Test
    void anInstanceHeardBeforeAnOutageTurnsSilentOnlyAWholeTtlAfterTheRegistryCaughtUpAgain() {
        InstanceRules rules = new InstanceRules(TTL, Duration.ofHours(1));
        PluginInstance heard = instance(node("p", "n", true, T0.plusSeconds(10)), T0.plusSeconds(10));
        RecordingWindow window = RecordingWindow.startedAt(T0).caughtUp(T0.plusSeconds(1)).caughtUp(T0.plusSeconds(60))
                .interrupted(T0.plusSeconds(61)).caughtUp(T0.plusSeconds(661));

        assertFalse(rules.sweep(List.of(heard), rules.cutoffs(window.caughtUp(T0.plusSeconds(751)))).changed(),
                "10 min of outage and a TTL after it are not a TTL of recorded silence");
        InstanceRules.SweepResult result = rules.sweep(List.of(heard), rules.cutoffs(window.caughtUp(T0.plusSeconds(752))));
        assertEquals(List.of("n"), result.silenced());
        assertEquals("no heartbeat from node n for more than 90s", result.kept().get(0).healthDescription());
    }

    @Test
    void theRemovalDelayCountsOnlyRecordedTimeToo() {
        InstanceRules rules = new InstanceRules(TTL, Duration.ofHours(1));
        RecordingWindow window = RecordingWindow.startedAt(T0).caughtUp(T0.plusSeconds(1)).caughtUp(T0.plusSeconds(3600));
        InstanceRules.Cutoffs cutoffs = rules.cutoffs(window);
        assertEquals(T0.plusSeconds(3510), cutoffs.silentIfReceivedBefore());
        assertNull(cutoffs.removedIfReceivedBefore(), "the window is shorter than the removal delay");

        InstanceRules.Cutoffs later = rules.cutoffs(window.caughtUp(T0.plusSeconds(3602)));
        assertEquals(T0.plusSeconds(2), later.removedIfReceivedBefore());
        // silenced by an earlier sweep (a never-silenced one is silenced first: InstanceRulesTest)
        PluginInstance old = instance(node("p", "n", true, T0), T0).silencedBecause(rules.silenceReason("n"));
        assertTrue(rules.sweep(List.of(old), later).pluginGone());
        assertFalse(rules.cutoffs(RecordingWindow.startedAt(T0)).any(), "nothing is due before the first catch-up");
    }

    @Test
    void anInconsistentWindowIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new RecordingWindow(T0, T0.plusSeconds(1), null));
        assertThrows(IllegalArgumentException.class, () -> new RecordingWindow(T0, T0, T0));
        assertThrows(IllegalArgumentException.class, () -> new RecordingWindow(T0, T0.plusSeconds(2), T0.plusSeconds(1)));
    }
}
