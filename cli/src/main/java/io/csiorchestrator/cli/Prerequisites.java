package io.csiorchestrator.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The machine's tools a run needs, checked before it starts anything: {@code cli/prerequisites.sh} holds the one list
 * (tool, Debian package, what needs it; the {@code csi} script runs it before each command too), this runs it for
 * what only the Java side knows (the faults of a chaos run).
 */
final class Prerequisites {

    /** The script, relative to the project's home. */
    static final String SCRIPT = "cli/prerequisites.sh";

    private Prerequisites() {
    }

    /** Fails, naming each missing tool and its package, unless everything {@code what} names is on this machine. */
    static void require(Path home, String... what) {
        check(home, Map.of(), what).ifPresent(problem -> {
            throw new Operator.Failure(problem.strip());
        });
    }

    /**
     * What the script said is missing (empty: nothing), with {@code env} added to this process's environment (a test
     * gives a PATH of its own).
     */
    static Optional<String> check(Path home, Map<String, String> env, String... what) {
        Path script = home.resolve(SCRIPT);
        if (!Files.isRegularFile(script)) {
            throw new Operator.Failure("cannot check the prerequisites: no " + script + " (--home or CSI_HOME: the project's"
                    + " directory)");
        }
        List<String> command = new ArrayList<>(List.of("bash", script.toString()));
        command.addAll(List.of(what));
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
            builder.environment().putAll(env);
            Process process = builder.start();
            // read to its end: the script only looks things up and exits (java -version is the slowest)
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            process.waitFor();
            return process.exitValue() == 0 ? Optional.empty()
                    : Optional.of(output.isBlank() ? script + " exited " + process.exitValue() : output);
        } catch (IOException e) {
            throw new Operator.Failure("cannot run " + script + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Operator.Failure("interrupted while checking the prerequisites");
        }
    }
}
