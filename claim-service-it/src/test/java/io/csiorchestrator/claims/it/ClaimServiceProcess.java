package io.csiorchestrator.claims.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import io.csiorchestrator.localinfra.FreePorts;
import io.csiorchestrator.localinfra.SharedArchive;
import io.csiorchestrator.testkit.TestTokens;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One claim-service instance: the packaged application ({@code target/quarkus-app/quarkus-run.jar}, system
 * property {@code csi.claims.jar}) running as a separate JVM process in the prod profile, its console in a log
 * file. {@link #kill9()} is a real SIGKILL: no shutdown hook, no producer flush, no lock released by the
 * process itself.
 */
final class ClaimServiceProcess {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    final String name;
    final int httpPort;
    final Path log;
    /**
     * Where this process's output starts in {@link #log}: the file is appended to, so it may hold an earlier
     * process's output under the same name (a re-run without {@code mvn clean}); {@link #log()} reads from here only.
     */
    private final long logStart;
    private final Process process;

    private ClaimServiceProcess(String name, int httpPort, Path log, long logStart, Process process) {
        this.name = name;
        this.httpPort = httpPort;
        this.log = log;
        this.logStart = logStart;
        this.process = process;
    }

    /**
     * Starts an instance with {@code env} (environment variables) and {@code properties} (system properties);
     * the HTTP port is a free one chosen here.
     */
    static ClaimServiceProcess start(String name, Path logDir, Map<String, String> env, Map<String, String> properties) {
        Path jar = Path.of(System.getProperty("csi.claims.jar", "target/quarkus-app/quarkus-run.jar"));
        assertTrue(Files.isRegularFile(jar), jar + " (package claim-service first)");
        // below the kernel's ephemeral range, in this module's band: a port 0 picked was taken by another process's
        // outgoing connection before the service bound it ("Port ... seems to be in use", seen in CI)
        int port = FreePorts.take();
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path real = jar.toAbsolutePath().normalize();
        List<String> cmd = new ArrayList<>(List.of(java.toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dquarkus.http.port=" + port));
        // the class-data archive `up` and the system ITs use for this jar (about a quarter less CPU per start)
        cmd.addAll(SharedArchive.plan(java, List.of(real), real.getParent().resolve("cds"), "claim-service").options());
        properties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        // the tests' key set (TestTokens): every request below carries an admin token signed with its primary key
        Path jwks = logDir.resolve("test-jwks.json");
        try (var in = ClaimServiceProcess.class.getClassLoader().getResourceAsStream(TestTokens.JWKS_RESOURCE)) {
            Files.write(jwks, in.readAllBytes());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        cmd.add("-Dmp.jwt.verify.publickey.location=" + jwks.toAbsolutePath());
        // the tests' record-signing keys (TestIdentities): records are checked as in production
        cmd.add("-Dcsi.security.trust-file=" + io.csiorchestrator.testkit.TestIdentities.trustFile());
        // and claim-service's sealing key (issue 20 item 4)
        io.csiorchestrator.testkit.TestIdentities.sealing(io.csiorchestrator.testkit.TestIdentities.CLAIM_SERVICE);
        cmd.add("-Dcsi.secrets.seal-key-file=" + io.csiorchestrator.testkit.TestIdentities.sealKeyFile(
                io.csiorchestrator.testkit.TestIdentities.CLAIM_SERVICE));
        cmd.add("-jar");
        cmd.add(real.toString());
        Path log = logDir.resolve(name + ".log");
        ProcessBuilder builder = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().putAll(env);
        try {
            long logStart = Files.exists(log) ? Files.size(log) : 0;
            return new ClaimServiceProcess(name, port, log, logStart, builder.start());
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + name, e);
        }
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** SIGKILL ({@code Process.destroyForcibly} on Linux), then waits; the exit status (137 = 128 + SIGKILL). */
    int kill9() throws InterruptedException {
        process.destroyForcibly();
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), name + " did not die");
        return process.exitValue();
    }

    /** Stops the process if it still runs (cleanup), after writing its threads next to its log ({@code jcmd Thread.print}). */
    void destroy() throws InterruptedException {
        if (process.isAlive()) {
            Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
            if (Files.isExecutable(jcmd)) {
                try {
                    new ProcessBuilder(jcmd.toString(), Long.toString(process.pid()), "Thread.print").redirectErrorStream(true)
                            .redirectOutput(log.resolveSibling(name + ".threads.txt").toFile()).start().waitFor(30, TimeUnit.SECONDS);
                } catch (IOException e) {
                    // diagnostics only
                }
            }
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** This process's console output so far (not what an earlier process left in the same file). */
    String log() {
        try (java.nio.channels.SeekableByteChannel channel = Files.newByteChannel(log)) {
            channel.position(Math.min(logStart, channel.size()));
            return new String(java.nio.channels.Channels.newInputStream(channel).readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    /** GET {@code path}: status and body; status -1 while nothing answers. */
    HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET());
    }

    HttpResponse<String> postJson(String path, String json) {
        return send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)));
    }

    /** A gauge of /q/metrics (Prometheus text), empty while the instance does not answer or has no such gauge. */
    OptionalDouble gauge(String metric) {
        HttpResponse<String> response = get("/q/metrics");
        if (response == null || response.statusCode() != 200) {
            return OptionalDouble.empty();
        }
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(metric) + "(?:\\{[^}]*})? ([0-9.eE+-]+)").matcher(response.body());
        return m.find() ? OptionalDouble.of(Double.parseDouble(m.group(1))) : OptionalDouble.empty();
    }

    /** Whether this instance reports itself the leader ({@code csi_claims_leader} 1); fails if the process died. */
    boolean leads() {
        assertTrue(process.isAlive(), name + " died; its log:\n" + tail());
        return gauge("csi_claims_leader").orElse(-1) == 1.0;
    }

    /** Whether this instance is up and a standby ({@code csi_claims_leader} 0); fails if the process died. */
    boolean isStandby() {
        assertTrue(process.isAlive(), name + " died; its log:\n" + tail());
        return gauge("csi_claims_leader").orElse(-1) == 0.0;
    }

    String tail() {
        String text = log();
        return text.length() > 6000 ? text.substring(text.length() - 6000) : text;
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + httpPort + path);
    }

    private static HttpResponse<String> send(HttpRequest.Builder request) {
        try {
            return HTTP.send(request.timeout(Duration.ofSeconds(10)).header("Authorization", TestTokens.adminBearer()).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return name + "[pid " + process.pid() + ", http " + httpPort + "]";
    }
}
