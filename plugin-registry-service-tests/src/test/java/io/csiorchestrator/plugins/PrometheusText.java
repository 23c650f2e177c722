package io.csiorchestrator.plugins;

import static io.restassured.RestAssured.given;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads samples out of the Prometheus text served at {@code /q/metrics}. */
final class PrometheusText {

    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})?\\s+(\\S+)(?:\\s+\\S+)?$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    record Sample(String name, Map<String, String> labels, double value) {
    }

    private PrometheusText() {
    }

    static String scrape() {
        return given().accept("text/plain").get("/q/metrics").then().statusCode(200).extract().asString();
    }

    static List<Sample> samples(String text) {
        List<Sample> samples = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            Matcher m = SAMPLE.matcher(line.trim());
            if (!m.matches()) {
                continue;
            }
            Map<String, String> labels = new LinkedHashMap<>();
            if (m.group(2) != null) {
                Matcher l = LABEL.matcher(m.group(2));
                while (l.find()) {
                    labels.put(l.group(1), l.group(2));
                }
            }
            samples.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3))));
        }
        return samples;
    }

    /** The samples named {@code name} whose labels include {@code labels}. */
    static List<Sample> find(String text, String name, Map<String, String> labels) {
        return samples(text).stream()
                .filter(s -> s.name().equals(name) && s.labels().entrySet().containsAll(labels.entrySet()))
                .toList();
    }

    /** The one sample named {@code name} with {@code labels}; fails when there is none. */
    static double value(String text, String name, Map<String, String> labels) {
        List<Sample> found = find(text, name, labels);
        if (found.size() != 1) {
            throw new AssertionError("expected one sample " + name + labels + ", found " + found);
        }
        return found.get(0).value();
    }
}
