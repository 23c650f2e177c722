package io.csiorchestrator.cli;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The workers' {@code csi_rpc_seconds} sum and count per RPC, from their Prometheus text ({@code /q/metrics}). */
final class RpcMetrics {

    private static final Pattern LINE = Pattern.compile("^csi_rpc_seconds_(sum|count)\\{([^}]*)}\\s+(\\S+)");
    private static final Pattern RPC = Pattern.compile("(?:^|,)rpc=\"([^\"]*)\"");

    /** Seconds and calls of one RPC, summed over every plugin and outcome code. */
    record Total(double seconds, double count) {
        Total plus(Total o) {
            return new Total(seconds + o.seconds, count + o.count);
        }

        Total minus(Total o) {
            return new Total(seconds - o.seconds, count - o.count);
        }
    }

    private RpcMetrics() {
    }

    static Map<String, Total> parse(String prometheus) {
        Map<String, Total> totals = new HashMap<>();
        for (String line : prometheus.split("\n")) {
            Matcher m = LINE.matcher(line);
            if (!m.find()) {
                continue;
            }
            Matcher rpc = RPC.matcher(m.group(2));
            if (!rpc.find()) {
                continue;
            }
            double value = Double.parseDouble(m.group(3));
            Total add = m.group(1).equals("sum") ? new Total(value, 0) : new Total(0, value);
            totals.merge(rpc.group(1), add, Total::plus);
        }
        return totals;
    }

    static Map<String, Total> plus(Map<String, Total> a, Map<String, Total> b) {
        Map<String, Total> sum = new HashMap<>(a);
        b.forEach((k, v) -> sum.merge(k, v, Total::plus));
        return sum;
    }

    /** Mean ms per call of each RPC called between {@code before} and {@code after}. */
    static Map<String, Double> meanMsPerCall(Map<String, Total> before, Map<String, Total> after) {
        Map<String, Double> means = new java.util.TreeMap<>();
        after.forEach((rpc, total) -> {
            Total delta = total.minus(before.getOrDefault(rpc, new Total(0, 0)));
            if (delta.count() > 0) {
                means.put(rpc, delta.seconds() * 1000 / delta.count());
            }
        });
        return means;
    }
}
