package io.csiorchestrator.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The chart of a sweep as SVG, written by hand: on top claim → ready latency (P50, P90, P99, P99.9; log
 * axes) against the offered rate (log axis), below CPU ms per operation per process against the offered
 * rate (log x, linear y). Every point is a circle with a {@code <title>} giving its values.
 */
final class SweepChart {

    /** One step of the sweep: offered rate (ops/s), latency percentiles (ms), CPU ms per operation per process. */
    record Point(double offeredRate, Map<String, Double> latencyMs, Map<String, Double> cpuMsPerOp) {
    }

    private static final int WIDTH = 760;
    private static final int PANEL = 300;
    private static final int LEFT = 70;
    private static final int RIGHT = 200;
    private static final String[] COLORS = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
            "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

    private SweepChart() {
    }

    static String svg(String title, List<Point> points) {
        StringBuilder s = new StringBuilder();
        int height = 2 * PANEL + 120;
        s.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        s.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(WIDTH).append("\" height=\"")
                .append(height).append("\" font-family=\"sans-serif\" font-size=\"11\">\n");
        s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        s.append("<text x=\"").append(LEFT).append("\" y=\"20\" font-size=\"14\">").append(esc(title)).append("</text>\n");
        double minRate = points.stream().mapToDouble(Point::offeredRate).min().orElse(1);
        double maxRate = points.stream().mapToDouble(Point::offeredRate).max().orElse(10);
        Axis x = new Axis(Math.max(minRate, 1e-3), Math.max(maxRate, minRate * 10), true);
        panel(s, "claim → ready latency (ms, log) vs offered rate (ops/s, log)", 40, points, x,
                p -> p.latencyMs(), true);
        panel(s, "CPU ms per operation (per process) vs offered rate (ops/s, log)", 40 + PANEL + 60, points, x,
                p -> p.cpuMsPerOp(), false);
        s.append("</svg>\n");
        return s.toString();
    }

    private record Axis(double min, double max, boolean log) {
        double fraction(double v) {
            if (log) {
                double lo = Math.log10(min);
                double hi = Math.log10(max);
                return hi == lo ? 0.5 : (Math.log10(Math.max(v, min)) - lo) / (hi - lo);
            }
            return max == min ? 0.5 : (v - min) / (max - min);
        }
    }

    private static void panel(StringBuilder s, String caption, int top, List<Point> points, Axis x,
                              java.util.function.Function<Point, Map<String, Double>> series, boolean logY) {
        int plotWidth = WIDTH - LEFT - RIGHT;
        Set<String> names = new LinkedHashSet<>();
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (Point p : points) {
            for (Map.Entry<String, Double> e : series.apply(p).entrySet()) {
                if (e.getValue() != null && e.getValue() > 0 && Double.isFinite(e.getValue())) {
                    names.add(e.getKey());
                    lo = Math.min(lo, e.getValue());
                    hi = Math.max(hi, e.getValue());
                }
            }
        }
        if (names.isEmpty()) {
            lo = 1;
            hi = 10;
        }
        Axis y = logY ? new Axis(pow10Floor(lo), pow10Ceil(hi), true) : new Axis(0, hi * 1.1, false);
        s.append("<text x=\"").append(LEFT).append("\" y=\"").append(top - 6).append("\">").append(esc(caption))
                .append("</text>\n");
        s.append("<rect x=\"").append(LEFT).append("\" y=\"").append(top).append("\" width=\"").append(plotWidth)
                .append("\" height=\"").append(PANEL).append("\" fill=\"none\" stroke=\"#333\"/>\n");
        for (double tick : ticks(x)) {
            double px = LEFT + x.fraction(tick) * plotWidth;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                    + "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", px, top, px, top + PANEL, px,
                    top + PANEL + 14, num(tick)));
        }
        for (double tick : ticks(y)) {
            double py = top + PANEL - y.fraction(tick) * PANEL;
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                    + "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT, py, LEFT + plotWidth, py,
                    LEFT - 4, py + 4, num(tick)));
        }
        int i = 0;
        for (String name : names) {
            String color = COLORS[i % COLORS.length];
            List<String> coords = new ArrayList<>();
            StringBuilder dots = new StringBuilder();
            for (Point p : points) {
                Double v = series.apply(p).get(name);
                if (v == null || !(v > 0) || !Double.isFinite(v)) {
                    continue;
                }
                double px = LEFT + x.fraction(p.offeredRate()) * plotWidth;
                double py = top + PANEL - y.fraction(v) * PANEL;
                coords.add(String.format(Locale.ROOT, "%.1f,%.1f", px, py));
                dots.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
                        + "<title>%s at %s ops/s: %s</title></circle>%n", px, py, color, esc(name),
                        num(p.offeredRate()), num(v)));
            }
            s.append("<polyline fill=\"none\" stroke=\"").append(color).append("\" points=\"")
                    .append(String.join(" ", coords)).append("\"/>\n").append(dots);
            int ly = top + 12 + 16 * i;
            s.append("<rect x=\"").append(LEFT + plotWidth + 10).append("\" y=\"").append(ly - 8)
                    .append("\" width=\"10\" height=\"10\" fill=\"").append(color).append("\"/>");
            s.append("<text x=\"").append(LEFT + plotWidth + 24).append("\" y=\"").append(ly).append("\">")
                    .append(esc(name)).append("</text>\n");
            i++;
        }
    }

    private static List<Double> ticks(Axis axis) {
        List<Double> ticks = new ArrayList<>();
        if (axis.log()) {
            for (double d = pow10Floor(axis.min()); d <= axis.max() * 1.0001; d *= 10) {
                for (double m : new double[] {1, 2, 5}) {
                    if (d * m >= axis.min() * 0.9999 && d * m <= axis.max() * 1.0001) {
                        ticks.add(d * m);
                    }
                }
            }
        } else {
            double step = niceStep((axis.max() - axis.min()) / 5);
            for (double v = 0; v <= axis.max(); v += step) {
                ticks.add(v);
            }
        }
        return ticks;
    }

    private static double niceStep(double raw) {
        if (raw <= 0) {
            return 1;
        }
        double p = pow10Floor(raw);
        for (double m : new double[] {1, 2, 5, 10}) {
            if (p * m >= raw) {
                return p * m;
            }
        }
        return p * 10;
    }

    static double pow10Floor(double v) {
        return Math.pow(10, Math.floor(Math.log10(v)));
    }

    static double pow10Ceil(double v) {
        return Math.pow(10, Math.ceil(Math.log10(v)));
    }

    private static String num(double v) {
        if (v >= 100 || v == Math.rint(v)) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        return String.format(Locale.ROOT, v >= 1 ? "%.1f" : "%.3g", v);
    }

    static String esc(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }

    /** Keeps insertion order; a convenience for callers building a point. */
    static Map<String, Double> ordered() {
        return new LinkedHashMap<>();
    }
}
