package io.csiorchestrator.cli.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.cli.Main;
import io.csiorchestrator.cli.Mounts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code ./csi chaos --short} through the CLI ({@link Main#run}) in {@code target/chaos-*}: its own system of real
 * processes, a steady load of claims and releases, and four faults (a claim-service kill -9 with a second
 * replica running, a worker kill -9, a hostpath plugin kill -9, a PostgreSQL kill -9 restarted after 20 s).
 * Asserts exit 0, a complete table (a row per fault and the final row, every request answered, each fault
 * converged) with no violation, and nothing left mounted.
 */
class ChaosIT {

    private static final List<String> FAULTS = List.of("claims-failover", "worker-kill-node-1", "plugin-kill-node-2",
            "postgres-kill");

    private Path work;

    @AfterEach
    void unmountLeftovers() {
        if (work != null) {
            Mounts.unmountAllUnder(work);
        }
    }

    @Test
    void shortFaultSuiteKeepsEveryInvariant() throws Exception {
        work = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "chaos-");
        Path json = work.resolve("chaos.json");
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(output, true, StandardCharsets.UTF_8);
        int code = Main.run(new String[] {"chaos", "--short", "--work-dir", work.resolve("system").toString(),
                "--json", json.toString()}, out, out);
        String printed = output.toString(StandardCharsets.UTF_8);
        System.out.print(printed);

        assertEquals(0, code, printed);
        JsonNode report = new ObjectMapper().readTree(json.toFile());
        assertTrue(report.path("passed").asBoolean(), report.toString());
        List<String> faults = new ArrayList<>();
        for (JsonNode row : report.path("rows")) {
            faults.add(row.path("fault").asText());
            assertEquals(0, row.path("violations").size(), row.toString());
            assertEquals(row.path("requests").asInt(), row.path("answers").asInt(), row.toString());
            assertTrue(row.path("requests").asInt() > 0, "no request in " + row);
            if (!row.path("fault").asText().equals("final")) {
                assertTrue(row.path("convergedAfterMillis").asLong() >= 0, "not converged: " + row);
            }
        }
        List<String> expected = new ArrayList<>(FAULTS);
        expected.add("final");
        assertEquals(expected, faults);
        assertTrue(printed.contains("FAULT") && printed.contains("CONVERGED AFTER"), printed);
        assertEquals(List.of(), Mounts.under(work), "mounts left under " + work);
    }
}
