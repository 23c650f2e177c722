package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.localinfra.SharedArchive;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * local-infra's {@link SharedArchive} with real JVMs on a real jar (compiled here: a main class that waits for a line
 * on its standard input, then exits normally): the first start writes the archive at its exit while a second start
 * meanwhile gets nothing; the next start checks and publishes it and maps it ({@code -Xshare:on} and the class
 * loaded from the shared file); a writer killed with SIGKILL, or a cut file, is replaced by a new writer.
 */
class SharedArchiveTest {

    private static final Path JAVA = Path.of(System.getProperty("java.home"), "bin", "java");

    @TempDir
    static Path jarDir;
    static Path jar;

    @BeforeAll
    static void aJar() throws IOException {
        Path src = Files.createDirectories(jarDir.resolve("src/demo"));
        Files.writeString(src.resolve("Waits.java"), """
                package demo;
                public class Waits {
                    public static void main(String[] args) throws Exception {
                        System.out.println("ready");
                        System.out.flush();
                        new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
                    }
                }
                """);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        Path classes = Files.createDirectories(jarDir.resolve("classes"));
        assertEquals(0, javac.run(null, null, null, "-d", classes.toString(), src.resolve("Waits.java").toString()));
        jar = jarDir.resolve("waits.jar");
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest)) {
            out.putNextEntry(new JarEntry("demo/Waits.class"));
            out.write(Files.readAllBytes(classes.resolve("demo/Waits.class")));
            out.closeEntry();
        }
    }

    @Test
    void theFirstStartWritesAtItsExitTheNextPublishesAndMapsIt(@TempDir Path dir) throws Exception {
        SharedArchive.Plan first = SharedArchive.plan(JAVA, List.of(jar), dir, "waits");
        assertEquals(SharedArchive.Mode.WRITE, first.mode(), first.reason());
        assertTrue(first.options().stream().anyMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit=")), first.options().toString());
        Process writer = start(first.options());

        SharedArchive.Plan meanwhile = SharedArchive.plan(JAVA, List.of(jar), dir, "waits");
        assertEquals(SharedArchive.Mode.NONE, meanwhile.mode(), "a second writer while the first runs: " + meanwhile);
        assertEquals(List.of(), meanwhile.options());

        try (OutputStream in = writer.getOutputStream()) {
            in.write("\n".getBytes(StandardCharsets.UTF_8));
        }
        assertTrue(writer.waitFor(120, TimeUnit.SECONDS), "the writer exits");
        assertEquals(0, writer.exitValue());
        assertFalse(Files.exists(first.archive()), "not in place before a start checked it");

        SharedArchive.Plan next = SharedArchive.plan(JAVA, List.of(jar), dir, "waits");
        assertEquals(SharedArchive.Mode.USE, next.mode(), next.reason());
        assertEquals(List.of("-XX:SharedArchiveFile=" + first.archive()), next.options());
        assertTrue(Files.isRegularFile(first.archive()));
        try (var left = Files.list(dir)) {
            assertEquals(List.of(first.archive()), left.toList(), "the lock and the written file are gone");
        }
        // -Xshare:on fails the start if the archive cannot be mapped; the main class comes from it
        List<String> mapped = new ArrayList<>(next.options());
        mapped.addAll(List.of("-Xshare:on", "-Xlog:class+load=info"));
        Process user = start(mapped);
        user.getOutputStream().close();
        String out = new String(user.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(user.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, user.exitValue(), out);
        assertTrue(out.lines().anyMatch(l -> l.contains("demo.Waits") && l.contains("shared objects file (top)")),
                "demo.Waits loaded from the dynamic archive:\n" + out.lines().filter(l -> l.contains("demo.")).toList());
    }

    @Test
    void aWriterKilledBeforeItsExitOrACutFileIsReplacedByANewWriter(@TempDir Path dir) throws Exception {
        SharedArchive.Plan first = SharedArchive.plan(JAVA, List.of(jar), dir, "waits");
        Process writer = start(first.options());
        writer.destroyForcibly();
        assertTrue(writer.waitFor(30, TimeUnit.SECONDS));

        SharedArchive.Plan again = SharedArchive.plan(JAVA, List.of(jar), dir, "waits");
        assertEquals(SharedArchive.Mode.WRITE, again.mode(), "the dead writer's lock is taken over: " + again);
        assertFalse(again.options().equals(first.options()), "a file of its own");

        // its file cut short (as by a kill in the middle of the write), and its writer gone
        String written = again.options().get(0).substring("-XX:ArchiveClassesAtExit=".length());
        Files.write(Path.of(written), new byte[] {1, 2, 3, 4});
        SharedArchive.Plan afterCut = SharedArchive.plan(JAVA, List.of(jar), dir, "waits");
        assertEquals(SharedArchive.Mode.WRITE, afterCut.mode(), "a cut file is refused and written anew: " + afterCut);
        assertFalse(Files.exists(Path.of(written)), "the cut file is removed");
        assertFalse(Files.exists(first.archive()), "never published");
    }

    private static Process start(List<String> options) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(JAVA.toString(), "-XX:TieredStopAtLevel=1"));
        cmd.addAll(options);
        cmd.addAll(List.of("-cp", jar.toAbsolutePath().normalize().toString(), "demo.Waits"));
        Process process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        if (options.stream().anyMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit="))) {
            // started: its first line (so the process runs with the option on its command line)
            byte[] line = new byte[6];
            assertEquals(6, process.getInputStream().readNBytes(line, 0, 6));
            assertEquals("ready\n", new String(line, StandardCharsets.UTF_8));
        }
        return process;
    }
}
