package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/** The sweep's SVG chart: well-formed XML with one point per step and series, each titled with its values. */
class SweepChartTest {

    /**
     * Three steps (10, 20, 50 ops/s), each with two latency percentiles and CPU per operation of two processes
     * (one named with markup characters): the SVG parses as XML, has 3 x 4 circles, and each circle's title
     * names its series, rate and value; the names are escaped.
     */
    @Test
    void chartIsWellFormedXmlWithEveryPointTitled() throws Exception {
        List<SweepChart.Point> points = new ArrayList<>();
        double[] rates = {10, 20, 50};
        for (int i = 0; i < rates.length; i++) {
            Map<String, Double> latency = new LinkedHashMap<>();
            latency.put("claim P50", 40.0 + i);
            latency.put("claim P99", 120.0 * (i + 1));
            Map<String, Double> cpu = new LinkedHashMap<>();
            cpu.put("claim-service", 19.0 + i);
            cpu.put("postgres <server> & co", 6.5);
            points.add(new SweepChart.Point(rates[i], latency, cpu));
        }
        String svg = SweepChart.svg("sweep \"test\" <1>", points);

        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
        assertEquals("svg", doc.getDocumentElement().getTagName());
        NodeList circles = doc.getElementsByTagName("circle");
        assertEquals(12, circles.getLength());
        List<String> titles = new ArrayList<>();
        for (int i = 0; i < circles.getLength(); i++) {
            titles.add(((Element) circles.item(i)).getElementsByTagName("title").item(0).getTextContent());
        }
        assertTrue(titles.contains("claim P50 at 10 ops/s: 40"), titles.toString());
        assertTrue(titles.contains("claim P99 at 50 ops/s: 360"), titles.toString());
        assertTrue(titles.contains("claim-service at 20 ops/s: 20"), titles.toString());
        assertTrue(titles.contains("postgres <server> & co at 50 ops/s: 6.5"), titles.toString());
        assertEquals(4, doc.getElementsByTagName("polyline").getLength());
    }

    /** The P99 point of a slower step lies higher on the chart (smaller y) than that of a faster one. */
    @Test
    void higherLatencyIsDrawnHigher() throws Exception {
        List<SweepChart.Point> points = List.of(
                new SweepChart.Point(10, Map.of("claim P99", 50.0), Map.of()),
                new SweepChart.Point(100, Map.of("claim P99", 500.0), Map.of()));
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(new ByteArrayInputStream(
                SweepChart.svg("t", points).getBytes(StandardCharsets.UTF_8)));
        NodeList circles = doc.getElementsByTagName("circle");
        double y10 = Double.parseDouble(((Element) circles.item(0)).getAttribute("cy"));
        double y100 = Double.parseDouble(((Element) circles.item(1)).getAttribute("cy"));
        double x10 = Double.parseDouble(((Element) circles.item(0)).getAttribute("cx"));
        double x100 = Double.parseDouble(((Element) circles.item(1)).getAttribute("cx"));
        assertTrue(y100 < y10, "500 ms at y " + y100 + ", 50 ms at y " + y10);
        assertTrue(x100 > x10, "100 ops/s at x " + x100 + ", 10 ops/s at x " + x10);
    }
}
