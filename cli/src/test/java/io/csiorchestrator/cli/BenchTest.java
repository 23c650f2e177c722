package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class BenchTest {

    @Test
    void percentilesAreNearestRank() {
        List<Long> values = List.of(40L, 10L, 30L, 20L, 50L, 60L, 70L, 80L, 90L, 100L);
        assertEquals(50, Bench.percentile(values, 50));
        assertEquals(90, Bench.percentile(values, 90));
        assertEquals(100, Bench.percentile(values, 100));
        assertEquals(10, Bench.percentile(values, 1));
        assertEquals(7, Bench.percentile(List.of(7L), 50));
        assertEquals(-1, Bench.percentile(List.of(), 50));
    }
}
