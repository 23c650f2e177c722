package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/** The bench's arithmetic on sample input: percentiles, /proc parsing and CPU per operation, RPC means, the floor. */
class BenchArithmeticTest {

    /**
     * Latencies of 1..1000 ms recorded in microseconds come out of the report in milliseconds at HdrHistogram's
     * precision (3 significant digits: within 0.1 %): P50 500, P90 900, P99 990, P99.9 999, max 1000.
     */
    @Test
    void percentilesAreMillisecondsFromTheHistogram() {
        Histogram h = new Histogram(600_000_000L, 3);
        for (long ms = 1; ms <= 1000; ms++) {
            h.recordValue(ms * 1000);
        }
        ObjectNode p = LoadBench.percentiles(h);
        assertEquals(1000, p.path("count").asLong());
        assertNear(500, p.path("p50Ms").asDouble());
        assertNear(900, p.path("p90Ms").asDouble());
        assertNear(990, p.path("p99Ms").asDouble());
        assertNear(999, p.path("p999Ms").asDouble());
        assertNear(1000, p.path("maxMs").asDouble());
        assertFalse(LoadBench.percentiles(new Histogram(3)).has("p50Ms"), "percentiles of no value");
    }

    private static void assertNear(double expected, double actual) {
        assertEquals(expected, actual, expected * 0.001, "expected " + expected + " ms within 0.1 %");
    }

    /**
     * utime, stime, cutime, cstime are fields 14-17 of /proc/<pid>/stat, counted after the command name, which
     * may hold spaces and parentheses; VmRSS is read in kB.
     */
    @Test
    void procStatFieldsAreCountedAfterTheCommandName() {
        String stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 81207 0 12 0 1500 320 7 3 20 0 57 0 4371 "
                + "4063158272 112345 18446744073709551615 1 1 0 0 0 0 0 4096 16796879 0 0 0 17 1 0 0 0 0 0";
        ProcStats.Times t = ProcStats.parseStat(stat);
        assertEquals(new ProcStats.Times(1500, 320, 7, 3), t);
        assertEquals(1820, t.own());
        assertEquals(1830, t.withReapedChildren());
        assertEquals(449_380L, ProcStats.parseRssKb("Name:\tjava\nVmPeak:\t 5000 kB\nVmRSS:\t  449380 kB\n"
                + "RssAnon:\t 400000 kB\n").getAsLong());
        assertTrue(ProcStats.parseRssKb("Name:\tkthreadd\nState:\tS\n").isEmpty());
        assertThrows(IllegalArgumentException.class, () -> ProcStats.parseStat("4242 no name"));
    }

    /** 250 clock ticks (100 per second: 2.5 s) over 50 operations are 50 ms of CPU per operation; none is -1. */
    @Test
    void cpuPerOperationIsTicksInMillisecondsOverOperations() {
        assertEquals(50.0, ProcStats.cpuMsPerOperation(250, 50), 1e-9);
        assertEquals(0.2, ProcStats.cpuMsPerOperation(1, 50), 1e-9);
        assertEquals(-1, ProcStats.cpuMsPerOperation(250, 0));
    }

    /** The process's own sample from /proc: present, at least one process, some RSS. */
    @Test
    void sampleOfThisProcessReadsProc() {
        ProcStats.Sample s = ProcStats.sampleTree(ProcessHandle.current().pid()).orElseThrow();
        assertTrue(s.processes() >= 1 && s.rssKb() > 0 && s.ticks() >= 0, s.toString());
    }

    /**
     * csi_rpc_seconds sum and count per RPC, over every plugin and code, from Prometheus text and OpenMetrics
     * (exemplars after '#'); the mean per call is the delta of the sums over the delta of the counts.
     */
    @Test
    void rpcMeansAreDeltasOfSumOverDeltasOfCount() {
        String before = """
                # TYPE csi_rpc_seconds summary
                csi_rpc_seconds_count{code="OK",plugin="hostpath",rpc="NodeStageVolume",} 10.0
                csi_rpc_seconds_sum{code="OK",plugin="hostpath",rpc="NodeStageVolume",} 0.5
                csi_rpc_seconds_max{code="OK",plugin="hostpath",rpc="NodeStageVolume",} 0.2
                csi_rpc_seconds_bucket{code="OK",plugin="hostpath",rpc="NodeStageVolume",le="0.005",} 1.0
                csi_rpc_seconds_count{code="OK",plugin="hostpath",rpc="Probe",} 4.0
                csi_rpc_seconds_sum{code="OK",plugin="hostpath",rpc="Probe",} 0.04
                """;
        String after = """
                csi_rpc_seconds_count{code="OK",plugin="hostpath",rpc="NodeStageVolume"} 18.0 # {span_id="a"} 1.0 17.0
                csi_rpc_seconds_sum{code="OK",plugin="hostpath",rpc="NodeStageVolume"} 0.9
                csi_rpc_seconds_count{code="UNAVAILABLE",plugin="hostpath",rpc="NodeStageVolume"} 2.0
                csi_rpc_seconds_sum{code="UNAVAILABLE",plugin="hostpath",rpc="NodeStageVolume"} 0.2
                csi_rpc_seconds_count{code="OK",plugin="hostpath",rpc="Probe"} 4.0
                csi_rpc_seconds_sum{code="OK",plugin="hostpath",rpc="Probe"} 0.04
                csi_rpc_seconds_count{code="OK",plugin="hostpath",rpc="ControllerPublishVolume"} 5.0
                csi_rpc_seconds_sum{code="OK",plugin="hostpath",rpc="ControllerPublishVolume"} 0.1
                """;
        Map<String, RpcMetrics.Total> b = RpcMetrics.parse(before);
        Map<String, RpcMetrics.Total> a = RpcMetrics.plus(RpcMetrics.parse(after), Map.of());
        assertEquals(new RpcMetrics.Total(0.5, 10), b.get("NodeStageVolume"));
        Map<String, Double> means = RpcMetrics.meanMsPerCall(b, a);
        assertEquals(Map.of("NodeStageVolume", 60.0, "ControllerPublishVolume", 20.0), roundedKeys(means));
    }

    private static Map<String, Double> roundedKeys(Map<String, Double> means) {
        Map<String, Double> r = new java.util.TreeMap<>();
        means.forEach((k, v) -> r.put(k, Math.round(v * 1000) / 1000.0));
        return r;
    }

    /**
     * A claim with controller publish: 6 Kafka hops x 0.5 ms + 3 commits x 2 ms + ControllerPublish 10 + NodeStage
     * 20 + NodePublish 30 ms = 69 ms, and a P50 of 138 ms is twice that. Without controller publish: 4 hops and 2
     * commits; an RPC not called adds nothing; a zero floor gives no ratio.
     */
    @Test
    void floorIsHopsTimesKafkaHopPlusCommitsTimesCommitPlusPluginTime() {
        Map<String, Double> rpcs = Map.of("ControllerPublishVolume", 10.0, "NodeStageVolume", 20.0,
                "NodePublishVolume", 30.0, "NodeUnpublishVolume", 5.0, "Probe", 99.0);
        Floor.Estimate claim = Floor.of(Floor.CLAIM_RPCS, rpcs, 0.5, 2.0, true);
        assertEquals(6, claim.hops());
        assertEquals(3, claim.commits());
        assertEquals(60.0, claim.pluginMs(), 1e-9);
        assertEquals(69.0, claim.totalMs(), 1e-9);
        assertEquals(2.0, Floor.ratio(138, claim), 1e-9);
        Floor.Estimate release = Floor.of(Floor.RELEASE_RPCS, rpcs, 0.5, 2.0, false);
        assertEquals(4 * 0.5 + 2 * 2.0 + 5.0, release.totalMs(), 1e-9);
        assertEquals(Map.of("NodeUnpublishVolume", 5.0), release.rpcMeanMs());
        assertTrue(Double.isNaN(Floor.ratio(10, Floor.of(Floor.CLAIM_RPCS, Map.of(), 0, 0, true))));
    }

    /** An outcome's reason loses this run's volume, allocation and node ids, so one cause is one line. */
    @Test
    void outcomesAreCountedByReasonWithoutIds() {
        ClaimStatus rejected = new ClaimStatus("r1", "default", "bench-007", "bench-0a1b2c3d-7-1", "node-1",
                ClaimMode.WRITE, ClaimState.REJECTED, "volume default/bench-007: write claim by allocation "
                + "bench-0a1b2c3d-7-1 on node node-1 rejected: allocation bench-0a1b2c3d-7-0 on node node-10 holds it",
                null, Instant.EPOCH);
        assertEquals("claim rejected (volume default/<volume>: write claim by allocation <alloc> on node <node> "
                        + "rejected: allocation <alloc> on node <node> holds it)",
                LoadBench.outcome(LoadSchedule.Kind.CLAIM, rejected, List.of("node-1", "node-10")));
        assertTrue(LoadBench.succeeded("release released (allocation <alloc> holds no claim)"));
        assertTrue(LoadBench.succeeded("claim ready"));
        assertFalse(LoadBench.succeeded("claim released"));
        assertFalse(LoadBench.succeeded("claim unanswered within the drain (60 s; last status: accepted)"));
    }

    /** Rates, durations and the --json file of `csi bench`. */
    @Test
    void benchOptionsParse() {
        assertEquals(20.0, Bench.parseRate("20/s"));
        assertEquals(0.5, Bench.parseRate("0.5"));
        assertThrows(Args.UsageException.class, () -> Bench.parseRate("0"));
        assertEquals(Duration.ofSeconds(30), Bench.parseDuration("duration", "30s"));
        assertEquals(Duration.ofMillis(250), Bench.parseDuration("slo", "250ms"));
        assertEquals(Duration.ofMinutes(2), Bench.parseDuration("duration", "2m"));
        assertEquals(Duration.ofSeconds(7), Bench.parseDuration("duration", "7"));
        assertThrows(Args.UsageException.class, () -> Bench.parseDuration("duration", "soon"));
        assertEquals(java.nio.file.Path.of("out.json"),
                Bench.jsonFile(Args.parse("--rate", "5", "--json", "out.json")).orElseThrow());
        assertThrows(Args.UsageException.class, () -> Bench.jsonFile(Args.parse("--rate", "5", "stray")));
        assertEquals(java.nio.file.Path.of("/tmp/s.svg"), LoadBench.svgBeside(java.nio.file.Path.of("/tmp/s.json")));
    }
}
