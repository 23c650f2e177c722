package io.csiorchestrator.plugins.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** When the group's committed offsets mean every record before the end offsets read earlier has been recorded. */
class RecordingWatchCatchUpTest {

    private static final TopicPartition P0 = new TopicPartition("plugin-health", 0);
    private static final TopicPartition P1 = new TopicPartition("plugin-health", 1);

    /**
     * @param name      the situation
     * @param end       end offsets read at the sample's instant
     * @param first     the partitions' first offsets now
     * @param committed the group's committed offsets now (a partition missing: none committed)
     * @param caughtUp  whether every record before {@code end} has been recorded
     */
    record Case(String name, Map<TopicPartition, Long> end, Map<TopicPartition, Long> first,
                Map<TopicPartition, Long> committed, boolean caughtUp) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Case> cases() {
        return Stream.of(
                new Case("every partition committed up to its end", Map.of(P0, 10L, P1, 4L), Map.of(P0, 0L, P1, 0L),
                        Map.of(P0, 10L, P1, 4L), true),
                new Case("committed past the end read earlier", Map.of(P0, 10L), Map.of(P0, 0L), Map.of(P0, 12L), true),
                new Case("one record waiting on one partition (lag 1)", Map.of(P0, 10L, P1, 4L), Map.of(P0, 0L, P1, 0L),
                        Map.of(P0, 10L, P1, 3L), false),
                new Case("a partition nobody has committed on, with records", Map.of(P0, 10L, P1, 4L),
                        Map.of(P0, 0L, P1, 0L), Map.of(P0, 10L), false),
                new Case("an empty partition nobody has committed on", Map.of(P0, 10L, P1, 0L), Map.of(P0, 0L, P1, 0L),
                        Map.of(P0, 10L), true),
                new Case("records deleted by retention before they were read", Map.of(P0, 10L), Map.of(P0, 10L),
                        Map.of(P0, 3L), true),
                new Case("some records deleted, the rest not read", Map.of(P0, 10L), Map.of(P0, 5L), Map.of(P0, 3L), false));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void caughtUpOnlyWhenNoRecordBeforeTheEndOffsetsIsLeftUnrecorded(Case c) {
        assertEquals(c.caughtUp(), RecordingWatch.caughtUp(c.end(), c.first(), c.committed()));
    }
}
