package io.csiorchestrator.cli;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeEventKind;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The invariants of {@code ./csi chaos}, checked over what the system published: the requests the suite's
 * scheduler sent, the claim-status records, the node-events records, the fault windows and the state at the
 * end. Pure: no I/O, every time in epoch milliseconds (record timestamps, one machine's clock).
 *
 * <ul>
 *   <li>{@code unanswered}: a request without a final answer (claim: ready, rejected, failed; release:
 *       released, rejected, failed);</li>
 *   <li>{@code answered-twice-differently}: two different final answers to one request (a claim answered ready
 *       and later ended by its node's fence, {@link #fenceEnded}, is not answered twice: that status ends the held
 *       claim, it answers no request);</li>
 *   <li>{@code granted-against-rules}: a claim granted (ready, or accepted to start) while a claim the rules do
 *       not allow beside it (a second writer of a single-writer volume, a claim on another node of a single-node
 *       volume) still held the volume, or a writer of a read-only volume: judged at grant time from the volume's
 *       claim-status records in partition order ({@link GrantCheck});</li>
 *   <li>{@code two-writers-mounted}: a single-writer volume mounted (published) for a writer on two nodes at
 *       once, from the node events in time order;</li>
 *   <li>{@code not-converged}: a fault not converged within the limit after it ended: every request sent
 *       up to its end answered, and on every node a claim sent after its end answered ready;</li>
 *   <li>{@code claim-lost}, {@code claim-held-after-release}, {@code mount-left}: the end state.</li>
 * </ul>
 */
public final class ChaosCheck {

    static final Set<ClaimState> CLAIM_FINAL = EnumSet.of(ClaimState.READY, ClaimState.REJECTED, ClaimState.FAILED);
    static final Set<ClaimState> RELEASE_FINAL = EnumSet.of(ClaimState.RELEASED, ClaimState.REJECTED, ClaimState.FAILED);
    public static final String FINAL = "final";

    private ChaosCheck() {
    }

    /**
     * A request the scheduler sent.
     *
     * @param accessMode  the volume's access mode (claims and releases)
     */
    public record Request(String id, String volume, String alloc, String node, ClaimMode mode, AccessMode accessMode,
                          long sentAt) {
        boolean isClaim() {
            return mode != ClaimMode.RELEASE;
        }
    }

    /**
     * A claim-status record: the request it answers, its state, its timestamp; the claim it is about (volume,
     * allocation, node, mode) and where it was on the topic (partition, offset; -1 when not from the topic).
     */
    public record Answer(String requestId, ClaimState state, String reason, long at, String volume, String alloc,
                         String node, ClaimMode mode, int partition, long offset) {
        /** An answer known by its request only (no claim, no place on the topic). */
        public Answer(String requestId, ClaimState state, String reason, long at) {
            this(requestId, state, reason, at, null, null, null, null, -1, -1);
        }
    }

    /** A node-events record about a volume. */
    public record NodeEv(String node, NodeEventKind kind, String volume, String alloc, boolean success, long at) {
    }

    /**
     * One fault: its load window {@code [windowStart, windowEnd)} (requests sent in it are its requests), the
     * moment it was done ({@code start}, e.g. the kill) and the moment it ended ({@code end}: the process back,
     * or, for a failover, the kill itself).
     */
    public record Fault(String name, long windowStart, long start, long end, long windowEnd) {
    }

    /** The state after the last release: claims claim-service still holds, mounts left, claims it lost. */
    public record EndState(List<String> claimsHeld, List<String> mountsLeft, List<String> claimsLost) {
        public static EndState clean() {
            return new EndState(List.of(), List.of(), List.of());
        }
    }

    public record Violation(String fault, String kind, String detail) {
        @Override
        public String toString() {
            return fault + ": " + kind + ": " + detail;
        }
    }

    /**
     * One row of the table; times in ms, -1 when there is none. {@code failed}: answers "failed" (not a violation
     * by themselves, a fault may cause them; shown so that a bug that fails claims is seen).
     */
    public record Row(String fault, int requests, int answers, int failed, long slowestMillis, long convergeMillis,
                      List<Violation> violations) {
    }

    public record Report(List<Row> rows, List<Violation> violations) {
        public boolean passed() {
            return violations.isEmpty();
        }
    }

    /** The final answer of each request (the first final-state record), by request id. */
    static Map<String, Answer> finalAnswers(Collection<Request> requests, List<Answer> answers) {
        Map<String, Request> byId = new HashMap<>();
        requests.forEach(r -> byId.put(r.id(), r));
        Map<String, Answer> first = new HashMap<>();
        for (Answer a : sorted(answers)) {
            Request r = byId.get(a.requestId());
            if (r != null && (r.isClaim() ? CLAIM_FINAL : RELEASE_FINAL).contains(a.state())) {
                first.putIfAbsent(a.requestId(), a);
            }
        }
        return first;
    }

    /** {@link #check(List, List, List, List, EndState, long, Map)} with each volume's access mode from its requests. */
    public static Report check(List<Request> requests, List<Answer> answers, List<NodeEv> nodeEvents, List<Fault> faults,
                               EndState end, long convergeLimitMillis) {
        Map<String, AccessMode> modes = new HashMap<>();
        requests.forEach(r -> modes.putIfAbsent(r.volume(), r.accessMode()));
        return check(requests, answers, nodeEvents, faults, end, convergeLimitMillis, modes);
    }

    /** The invariants; {@code modes}: every volume's access mode (claims on a volume not in it are not judged). */
    public static Report check(List<Request> requests, List<Answer> answers, List<NodeEv> nodeEvents, List<Fault> faults,
                               EndState end, long convergeLimitMillis, Map<String, AccessMode> modes) {
        Map<String, Answer> done = finalAnswers(requests, answers);
        List<Violation> all = new ArrayList<>();
        Map<String, Request> byId = new HashMap<>();
        requests.forEach(r -> byId.put(r.id(), r));

        // Every request answered, once.
        for (Request r : requests) {
            Answer a = done.get(r.id());
            if (a == null) {
                all.add(new Violation(faultOf(faults, r.sentAt()), "unanswered", describe(r) + " sent at " + r.sentAt()
                        + " has no final answer"));
            }
        }
        // No claim granted beside one the rules do not allow, judged at grant time.
        for (GrantCheck.Grant g : GrantCheck.check(answers, modes)) {
            all.add(new Violation(faultOf(faults, g.at()), "granted-against-rules", g.detail()));
        }
        Map<String, Set<ClaimState>> finals = new LinkedHashMap<>();
        for (Answer a : sorted(answers)) {
            Request r = byId.get(a.requestId());
            if (r != null && (r.isClaim() ? CLAIM_FINAL : RELEASE_FINAL).contains(a.state())) {
                Set<ClaimState> before = finals.getOrDefault(a.requestId(), Set.of());
                if (r.isClaim() && before.contains(ClaimState.READY) && fenceEnded(a)) {
                    continue; // the held claim ended by its node's fence: no second answer to the claim request
                }
                finals.computeIfAbsent(a.requestId(), k -> new TreeSet<>()).add(a.state());
            }
        }
        finals.forEach((id, states) -> {
            if (states.size() > 1) {
                Request r = byId.get(id);
                all.add(new Violation(faultOf(faults, r.sentAt()), "answered-twice-differently", describe(r)
                        + " was answered " + states.stream().map(ClaimState::wire).toList()));
            }
        });

        // No single-writer volume mounted for writers on two nodes at once.
        Map<String, Request> claimOfAlloc = new HashMap<>();
        for (Request r : requests) {
            if (r.isClaim()) {
                claimOfAlloc.put(r.volume() + "/" + r.alloc(), r);
            }
        }
        Map<String, Map<String, String>> writers = new HashMap<>(); // volume -> alloc -> node
        List<NodeEv> events = new ArrayList<>(nodeEvents);
        events.sort(Comparator.comparingLong(NodeEv::at));
        for (NodeEv e : events) {
            if (!e.success() || e.volume() == null || e.alloc() == null) {
                continue;
            }
            Request claim = claimOfAlloc.get(e.volume() + "/" + e.alloc());
            if (claim == null || claim.mode() != ClaimMode.WRITE || !claim.accessMode().singleWriter()) {
                continue;
            }
            Map<String, String> mounted = writers.computeIfAbsent(e.volume(), k -> new LinkedHashMap<>());
            if (e.kind() == NodeEventKind.MOUNT) {
                mounted.put(e.alloc(), e.node());
                Set<String> nodes = new LinkedHashSet<>(mounted.values());
                // single-node-single-writer (issue 34, ReadWriteOncePod): one writer allocation, even on one node
                boolean perAllocation = claim.accessMode() == io.csiorchestrator.events.AccessMode.SINGLE_NODE_SINGLE_WRITER;
                if (nodes.size() > 1 || perAllocation && mounted.size() > 1) {
                    all.add(new Violation(faultOf(faults, e.at()), "two-writers-mounted", "volume " + e.volume()
                            + " (" + claim.accessMode().wire() + ") mounted for writers " + mounted + " at " + e.at()));
                }
            } else if (e.kind() == NodeEventKind.UNMOUNT || e.kind() == NodeEventKind.FENCED) {
                mounted.remove(e.alloc());
            }
        }

        // Each fault converged within the limit.
        Map<String, Long> converge = new HashMap<>();
        Set<String> nodes = new TreeSet<>();
        requests.stream().filter(Request::isClaim).map(Request::node).forEach(nodes::add);
        for (Fault f : faults) {
            long took = convergeMillis(f, requests, done, nodes);
            converge.put(f.name(), took);
            if (took < 0 || took > convergeLimitMillis) {
                all.add(new Violation(f.name(), "not-converged", took < 0
                        ? "not converged: " + pendingAfter(f, requests, done, nodes)
                        : "converged " + took + " ms after the fault ended, limit " + convergeLimitMillis + " ms"));
            }
        }

        // The end state.
        end.claimsLost().forEach(c -> all.add(new Violation(FINAL, "claim-lost", c)));
        end.claimsHeld().forEach(c -> all.add(new Violation(FINAL, "claim-held-after-release", c)));
        end.mountsLeft().forEach(m -> all.add(new Violation(FINAL, "mount-left", m)));

        List<Row> rows = new ArrayList<>();
        for (Fault f : faults) {
            rows.add(row(f.name(), requests, done, all, converge.get(f.name()),
                    r -> faultOf(faults, r.sentAt()).equals(f.name())));
        }
        rows.add(row(FINAL, requests, done, all, -1, r -> faultOf(faults, r.sentAt()).equals(FINAL)));
        return new Report(rows, List.copyOf(all));
    }

    private static Row row(String name, List<Request> requests, Map<String, Answer> done, List<Violation> all,
                           long converge, java.util.function.Predicate<Request> mine) {
        int sent = 0;
        int answered = 0;
        int failed = 0;
        long slowest = -1;
        for (Request r : requests) {
            if (!mine.test(r)) {
                continue;
            }
            sent++;
            Answer a = done.get(r.id());
            if (a != null) {
                answered++;
                failed += a.state() == ClaimState.FAILED ? 1 : 0;
                slowest = Math.max(slowest, a.at() - r.sentAt());
            }
        }
        return new Row(name, sent, answered, failed, slowest, converge,
                all.stream().filter(v -> v.fault().equals(name)).toList());
    }

    /**
     * Ms from the fault's end until every request sent in its window up to its end was answered and, on every
     * node, a claim sent after its end was answered ready; -1 when that never happened.
     */
    static long convergeMillis(Fault f, List<Request> requests, Map<String, Answer> done, Set<String> nodes) {
        long until = f.end();
        for (Request r : requests) {
            if (r.sentAt() >= f.windowStart() && r.sentAt() <= f.end()) {
                Answer a = done.get(r.id());
                if (a == null) {
                    return -1;
                }
                until = Math.max(until, a.at());
            }
        }
        for (String node : nodes) {
            long firstReady = Long.MAX_VALUE;
            for (Request r : requests) {
                Answer a = done.get(r.id());
                if (r.isClaim() && node.equals(r.node()) && r.sentAt() > f.end() && r.sentAt() < f.windowEnd()
                        && a != null && a.state() == ClaimState.READY) {
                    firstReady = Math.min(firstReady, a.at());
                }
            }
            if (firstReady == Long.MAX_VALUE) {
                return -1;
            }
            until = Math.max(until, firstReady);
        }
        return until - f.end();
    }

    private static String pendingAfter(Fault f, List<Request> requests, Map<String, Answer> done, Set<String> nodes) {
        List<String> why = new ArrayList<>();
        long open = requests.stream().filter(r -> r.sentAt() >= f.windowStart() && r.sentAt() <= f.end()
                && !done.containsKey(r.id())).count();
        if (open > 0) {
            why.add(open + " request(s) sent up to its end never answered");
        }
        for (String node : nodes) {
            boolean ready = requests.stream().anyMatch(r -> r.isClaim() && node.equals(r.node()) && r.sentAt() > f.end()
                    && r.sentAt() < f.windowEnd() && done.containsKey(r.id())
                    && done.get(r.id()).state() == ClaimState.READY);
            if (!ready) {
                why.add("no claim on " + node + " sent after its end was answered ready");
            }
        }
        return String.join("; ", why);
    }

    /** The fault whose window holds {@code at}, else {@link #FINAL}. */
    static String faultOf(List<Fault> faults, long at) {
        for (Fault f : faults) {
            if (at >= f.windowStart() && at < f.windowEnd()) {
                return f.name();
            }
        }
        return FINAL;
    }

    private static String describe(Request r) {
        return r.mode().wire() + " " + r.id() + " (volume " + r.volume() + ", allocation " + r.alloc()
                + (r.node() == null ? "" : ", node " + r.node()) + ")";
    }

    private static List<Answer> sorted(List<Answer> answers) {
        List<Answer> copy = new ArrayList<>(answers);
        copy.sort(Comparator.comparingLong(Answer::at));
        return copy;
    }

    /** claim-service's reason of a claim ended by its node's FENCED report (issue 19). */
    private static final Pattern FENCE_END = Pattern.compile(".+ fenced at epoch \\d+: mount removed");
    /** claim-service's reason of a claim it freed itself once its node's lease ended and the fence wait passed. */
    private static final Pattern LAPSE_END = Pattern.compile(
            ".+'s lease epoch \\d+ (lapsed|was fenced) and the fence wait passed: assumed detached");

    /**
     * Whether {@code a} is a claim-status that ends a held claim because of its node's fence, sent under the claim's
     * own request id after its ready answer: FAILED "node-1 fenced at epoch 3: mount removed" (the node's FENCED
     * report), or RELEASING or RELEASED "node-1's lease epoch 3 lapsed and the fence wait passed: assumed detached"
     * (claim-service frees it after the lapse, no release asked: that decision is final when it is announced; the
     * RELEASED that ends a claim whose controller-unpublish came after it carries no reason).
     */
    public static boolean fenceEnded(Answer a) {
        if (a.reason() == null) {
            return false;
        }
        return a.state() == ClaimState.FAILED && FENCE_END.matcher(a.reason()).matches()
                || (a.state() == ClaimState.RELEASED || a.state() == ClaimState.RELEASING)
                && LAPSE_END.matcher(a.reason()).matches();
    }

    /**
     * The scheduler learns of a held claim its node's fence ended, as a real scheduler does from claim-status: when
     * {@code a} is such a status ({@link #fenceEnded}) for the claim request {@code r} held in {@code held}
     * (allocation → node and mode), that allocation is no longer held. Returns whether it was removed.
     */
    public static boolean fenceEnd(Map<String, Held> held, Request r, Answer a) {
        if (r == null || !r.isClaim() || !fenceEnded(a) || !r.id().equals(a.requestId())) {
            return false;
        }
        Held h = held.get(r.alloc());
        if (h == null || !h.node().equals(r.node())) {
            return false;
        }
        held.remove(r.alloc());
        return true;
    }

    /**
     * The claims lost on {@code volume}: each allocation the scheduler holds ({@code expected}: answered ready, not
     * released, not ended by a fence) that claim-service does not hold ({@code heldThere}; {@code status} the HTTP
     * status of that read).
     */
    public static List<String> claimsLost(String volume, Set<String> expected, Set<String> heldThere, int status) {
        List<String> lost = new ArrayList<>();
        for (String alloc : new TreeSet<>(expected)) {
            if (!heldThere.contains(alloc)) {
                lost.add("volume " + volume + ": allocation " + alloc + " was answered ready and never released, but"
                        + " claim-service does not hold it (holds " + new TreeSet<>(heldThere) + "; HTTP " + status + ")");
            }
        }
        return lost;
    }

    /** A claim held on a volume: its node and mode. */
    public record Held(String node, ClaimMode mode) {
    }
}
