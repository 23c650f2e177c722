package io.csiorchestrator.hostpath.faults;

import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.TextFormat;
import io.grpc.Status;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fault-injection rules of the hostpath plugin, one per line:
 * <pre>
 * # a comment
 * NodePublishVolume UNAVAILABLE 2            the next 2 NodePublishVolume calls fail with UNAVAILABLE
 * NodeStageVolume FAILED_PRECONDITION * why  every NodeStageVolume call fails, with the message "why"
 * NodeUnpublishVolume NOT_FOUND              the next call fails (the count defaults to 1)
 * latency NodeStageVolume 200ms              NodeStageVolume answers 200 ms later (ms or s; * for every call)
 * probe-not-ready                            Probe answers ready=false
 * NodeStageVolume INTERNAL 1 bad {request}   the message echoes the call's request, secrets included
 * </pre>
 * A failure rule matches a CSI method by its csi.proto name, or {@code *} for every method. The
 * first matching rule with calls left applies. Lines that cannot be parsed are reported, not fatal.
 * A message's {@value #ECHO} is replaced by the request as text, unredacted: it plays a careless
 * plugin whose error echoes its input, so tests can check that a client never passes that on.
 *
 * @param lines         the text's lines, as read
 * @param failures      failure rules, in file order
 * @param latencies     latency rules, in file order
 * @param probeNotReady whether Probe reports not ready
 * @param problems      descriptions of the lines that could not be parsed
 */
public record FaultRules(List<String> lines, List<Failure> failures, List<Latency> latencies, boolean probeNotReady,
                         List<String> problems) {

    public static final FaultRules NONE = parse("");

    private static final Pattern DURATION = Pattern.compile("(\\d{1,7})(ms|s)");
    private static final String DEFAULT_MESSAGE = "injected fault";
    /** In a failure message: the request of the failed call, secrets and mount flags included. */
    public static final String ECHO = "{request}";

    /**
     * The next {@code remaining} calls of {@code method} fail with {@code code}; an empty
     * {@code remaining} means every call.
     */
    public record Failure(int line, String method, Status.Code code, OptionalInt remaining, String message) {

        public boolean matches(String calledMethod) {
            return (method.equals("*") || method.equals(calledMethod))
                    && (remaining.isEmpty() || remaining.getAsInt() > 0);
        }

        public Status status() {
            return Status.fromCode(code).withDescription(message);
        }

        /** The status for a call with this request: {@value #ECHO} in the message becomes the request's text. */
        public Status status(Object request) {
            if (!message.contains(ECHO) || !(request instanceof MessageOrBuilder echoed)) {
                return status();
            }
            return Status.fromCode(code).withDescription(message.replace(ECHO, TextFormat.shortDebugString(echoed)));
        }
    }

    /** Calls of {@code method} ({@code *}: every call) are delayed by {@code delay}. */
    public record Latency(String method, Duration delay) {
    }

    public static FaultRules parse(String text) {
        List<String> lines = text.isEmpty() ? List.of() : List.of(text.split("\n", -1));
        List<Failure> failures = new ArrayList<>();
        List<Latency> latencies = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        boolean probeNotReady = false;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] words = line.split("\\s+");
            int lineNumber = i + 1;
            if (words[0].equals("probe-not-ready") && words.length == 1) {
                probeNotReady = true;
            } else if (words[0].equals("latency")) {
                Optional<Latency> latency = parseLatency(words);
                latency.ifPresentOrElse(latencies::add,
                        () -> problems.add("line " + lineNumber + ": expected 'latency <Method|*> <N>ms|<N>s'"));
            } else {
                Optional<Failure> failure = parseFailure(i, words);
                failure.ifPresentOrElse(failures::add, () -> problems.add("line " + lineNumber
                        + ": expected '<Method|*> <GRPC_CODE> [<count>|*] [message]', 'latency ...' or 'probe-not-ready'"));
            }
        }
        return new FaultRules(lines, failures, latencies, probeNotReady, problems);
    }

    /** The first failure rule that applies to a call of {@code method}. */
    public Optional<Failure> failureFor(String method) {
        return failures.stream().filter(failure -> failure.matches(method)).findFirst();
    }

    /** The sum of the delays that apply to a call of {@code method}. */
    public Duration latencyFor(String method) {
        return latencies.stream()
                .filter(latency -> latency.method().equals("*") || latency.method().equals(method))
                .map(Latency::delay)
                .reduce(Duration.ZERO, Duration::plus);
    }

    /**
     * The rules' text after one call consumed {@code failure}: its count goes down by one, and the
     * line is removed at zero. Rules without a count are not consumed.
     */
    public String consume(Failure failure) {
        if (failure.remaining().isEmpty()) {
            return String.join("\n", lines);
        }
        List<String> next = new ArrayList<>(lines);
        int left = failure.remaining().getAsInt() - 1;
        if (left <= 0) {
            next.remove(failure.line());
        } else {
            String message = failure.message().equals(DEFAULT_MESSAGE) ? "" : " " + failure.message();
            next.set(failure.line(), failure.method() + " " + failure.code() + " " + left + message);
        }
        return String.join("\n", next);
    }

    private static Optional<Latency> parseLatency(String[] words) {
        if (words.length != 3) {
            return Optional.empty();
        }
        Matcher matcher = DURATION.matcher(words[2]);
        if (!matcher.matches()) {
            return Optional.empty();
        }
        long amount = Long.parseLong(matcher.group(1));
        Duration delay = matcher.group(2).equals("ms") ? Duration.ofMillis(amount) : Duration.ofSeconds(amount);
        return Optional.of(new Latency(words[1], delay));
    }

    private static Optional<Failure> parseFailure(int line, String[] words) {
        if (words.length < 2 || !(words[0].equals("*") || words[0].matches("[A-Z][A-Za-z]{1,63}"))) {
            return Optional.empty();
        }
        Status.Code code;
        try {
            code = Status.Code.valueOf(words[1].toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        if (code == Status.Code.OK) {
            return Optional.empty();
        }
        OptionalInt remaining = OptionalInt.of(1);
        int messageFrom = 2;
        if (words.length > 2 && words[2].equals("*")) {
            remaining = OptionalInt.empty();
            messageFrom = 3;
        } else if (words.length > 2 && words[2].matches("\\d{1,6}")) {
            remaining = OptionalInt.of(Integer.parseInt(words[2]));
            messageFrom = 3;
        }
        String message = words.length > messageFrom
                ? String.join(" ", Arrays.copyOfRange(words, messageFrom, words.length))
                : DEFAULT_MESSAGE;
        return Optional.of(new Failure(line, words[0], code, remaining, message));
    }
}
