package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The example integration written from CONTRACT.md alone (examples/python-scheduler, issue 33 item 5) reproduces the
 * committed test vectors byte for byte: signed bytes, signatures, every step of the sealing. It runs on Debian's
 * python3 with python3-cryptography ({@code CSI_PYTHON}, default {@code /usr/bin/python3}, the interpreter Debian's
 * packages install into; cli/prerequisites.sh installs them); a missing interpreter or package fails this test.
 */
class PythonExampleVectorsTest {

    /** The example's own check, given the vectors; a second or two, so a minute is only against a hung interpreter. */
    private static final long TIMEOUT_SECONDS = 60;

    @Test
    void thePythonExampleReproducesTheVectors() throws IOException, InterruptedException {
        Path example = Path.of("..", "examples", "python-scheduler", "check_vectors.py").toAbsolutePath().normalize();
        Path vectors = Path.of(ContractVectors.FILE).toAbsolutePath();
        assertTrue(Files.isRegularFile(example), example + " is missing");
        String python = System.getenv().getOrDefault("CSI_PYTHON", "/usr/bin/python3");
        assertTrue(Files.isExecutable(Path.of(python)), python + " is missing: apt-get install -y python3"
                + " python3-cryptography python3-confluent-kafka (cli/prerequisites.sh --install test)");
        Process p = new ProcessBuilder(python, example.toString(), vectors.toString())
                .directory(example.getParent().toFile()).redirectErrorStream(true).start();
        boolean ended = p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended, "check_vectors.py did not end within " + TIMEOUT_SECONDS + " s: " + out);
        assertEquals(0, p.exitValue(), "check_vectors.py failed:\n" + out);
        assertTrue(out.contains("vectors: 3 records, sealing: OK"), out);
    }
}
