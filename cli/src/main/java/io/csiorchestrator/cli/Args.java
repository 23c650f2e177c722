package io.csiorchestrator.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Command-line arguments: positionals, {@code --name value}, {@code --name=value} and boolean
 * flags written {@code -flag} or {@code --flag} (Nomad style, e.g. {@code -json}, {@code -force}).
 */
public final class Args {

    /** Options that take no value. */
    static final Set<String> FLAGS = Set.of("json", "force", "keep", "help", "no-build", "verbose", "json-logs", "fresh",
            "free-ports", "short", "sweep", "sequential", "w", "watch", "retire", "no-open");

    private final List<String> positionals;
    private final Map<String, String> options;
    /** Every value of each option given more than once, in order ({@link #options(String)}). */
    private final Map<String, List<String>> repeated;

    private Args(List<String> positionals, Map<String, String> options, Map<String, List<String>> repeated) {
        this.positionals = positionals;
        this.options = options;
        this.repeated = repeated;
    }

    public static Args parse(String... argv) {
        List<String> positionals = new ArrayList<>();
        Map<String, String> options = new LinkedHashMap<>();
        Map<String, List<String>> repeated = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            if (arg.equals("--")) {
                for (int j = i + 1; j < argv.length; j++) {
                    positionals.add(argv[j]);
                }
                break;
            }
            if (arg.startsWith("-") && arg.length() > 1) {
                String name = arg.startsWith("--") ? arg.substring(2) : arg.substring(1);
                String value = null;
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                if (name.isEmpty()) {
                    throw new UsageException("empty option name in '" + arg + "'");
                }
                if (FLAGS.contains(name)) {
                    if (value != null && !value.equals("true") && !value.equals("false")) {
                        throw new UsageException("-" + name + " takes no value (or true/false), got '" + value + "'");
                    }
                    options.put(name, value == null ? "true" : value);
                } else {
                    if (value == null) {
                        if (i + 1 >= argv.length) {
                            throw new UsageException("--" + name + " needs a value");
                        }
                        value = argv[++i];
                    }
                    options.put(name, value);
                    repeated.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
                }
            } else {
                positionals.add(arg);
            }
        }
        return new Args(List.copyOf(positionals), options, repeated);
    }

    public List<String> positionals() {
        return positionals;
    }

    public String positional(int index, String what) {
        if (index >= positionals.size()) {
            throw new UsageException("missing " + what);
        }
        return positionals.get(index);
    }

    public Optional<String> positionalOpt(int index) {
        return index < positionals.size() ? Optional.of(positionals.get(index)) : Optional.empty();
    }

    public Optional<String> option(String name) {
        return Optional.ofNullable(options.get(name));
    }

    /** Every value of an option that may be given more than once ({@code --mount-flag a --mount-flag b}), in order. */
    public List<String> options(String name) {
        return List.copyOf(repeated.getOrDefault(name, List.of()));
    }

    public String required(String name) {
        String value = options.get(name);
        if (value == null || value.isBlank()) {
            throw new UsageException("--" + name + " is required");
        }
        return value;
    }

    public boolean flag(String name) {
        return "true".equals(options.get(name));
    }

    /** Fails on options not in {@code allowed} (and not a global one). */
    public Args only(Set<String> allowed) {
        for (String name : options.keySet()) {
            if (!allowed.contains(name) && !Endpoints.OPTIONS.contains(name) && !name.equals("json") && !name.equals("help")) {
                throw new UsageException("unknown option -" + name);
            }
        }
        return this;
    }

    /** Fails when more positionals than {@code max} were given. */
    public Args atMost(int max) {
        if (positionals.size() > max) {
            throw new UsageException("unexpected argument '" + positionals.get(max) + "'");
        }
        return this;
    }

    /** A wrong command line: printed with the usage, exit code 2. */
    public static final class UsageException extends RuntimeException {
        public UsageException(String message) {
            super(message);
        }
    }
}
