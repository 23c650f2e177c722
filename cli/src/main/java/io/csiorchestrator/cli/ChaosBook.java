package io.csiorchestrator.cli;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

/**
 * The chaos scheduler's book: its volumes and what it believes each holds, the requests it sent, the claim-status
 * records read, and the allocations it is unsure of. What it sends is chosen from this view ({@link #next}); the
 * invariants are not: {@code granted-against-rules} is judged from the claim-status records alone
 * ({@link GrantCheck}), so what the reader had read when a request was sent decides nothing. Pure: no I/O, not
 * thread-safe (the suite calls it under one lock).
 */
final class ChaosBook {

    /** A volume of the run and what the scheduler knows of it. */
    static final class Vol {
        final String id;
        final AccessMode mode;
        /** Allocations answered ready, not released, not ended by a fence: allocation -> node and mode. */
        final Map<String, ChaosCheck.Held> held = new LinkedHashMap<>();
        /** The request in flight (at most one per volume), or null. */
        String busy;

        Vol(String id, AccessMode mode) {
            this.id = id;
            this.mode = mode;
        }
    }

    private final String namespace;
    private final List<String> nodes;
    private final Random random;
    final List<Vol> volumes = new ArrayList<>();
    /** Every request sent (a send that failed is none), in order. */
    final List<ChaosCheck.Request> requests = new ArrayList<>();
    /** The requests without their final answer yet, by id. */
    final Map<String, ChaosCheck.Request> pending = new HashMap<>();
    /** Every request sent, by id (a claim's later status, e.g. its end by a fence, names its request). */
    private final Map<String, ChaosCheck.Request> sent = new HashMap<>();
    /** Every claim-status record read, in the order read. */
    final List<ChaosCheck.Answer> answers = new ArrayList<>();
    /**
     * Allocations ({@code volume/allocation}) whose claim may be held though the scheduler does not know it: a send
     * that failed (maybe written), a release refused or failed. Each is released at the end and not expected held;
     * the volume's other allocations stay known.
     */
    final Set<String> uncertain = new LinkedHashSet<>();
    /** Volumes outside the scheduler's load whose claims are judged too (a fencing fault's own), with their mode. */
    private final Map<String, AccessMode> others = new LinkedHashMap<>();
    private long sequence;

    ChaosBook(String namespace, List<String> nodes, Random random) {
        this.namespace = namespace;
        this.nodes = List.copyOf(nodes);
        this.random = random;
    }

    Vol add(String id, AccessMode mode) {
        Vol v = new Vol(id, mode);
        volumes.add(v);
        return v;
    }

    /** A volume claimed outside the scheduler (a fencing fault's own): its claims are judged by its mode too. */
    void judgeToo(String id, AccessMode mode) {
        others.put(id, mode);
    }

    /** Every volume's access mode, for the checks. */
    Map<String, AccessMode> modes() {
        Map<String, AccessMode> modes = new LinkedHashMap<>(others);
        volumes.forEach(v -> modes.put(v.id, v.mode));
        return modes;
    }

    Vol volume(String id) {
        return volumes.stream().filter(v -> v.id.equals(id)).findFirst().orElseThrow();
    }

    /**
     * The next request, or null when every volume has one in flight: on an idle volume, a release of a claim it holds
     * (half the time, when it holds one), else a read or write claim from a new allocation on a random node (write
     * half the time, 15% on a read-only volume: those must be refused). The volume is busy with it from now on.
     */
    ClaimRequested next() {
        List<Vol> idle = volumes.stream().filter(v -> v.busy == null).toList();
        if (idle.isEmpty()) {
            return null;
        }
        Vol v = idle.get(random.nextInt(idle.size()));
        ClaimRequested request;
        if (!v.held.isEmpty() && random.nextDouble() < 0.5) {
            List<String> allocs = new ArrayList<>(v.held.keySet());
            request = ClaimClient.release(namespace, v.id, allocs.get(random.nextInt(allocs.size())));
        } else {
            String node = nodes.get(random.nextInt(nodes.size()));
            ClaimMode mode = random.nextDouble() < (v.mode.allowsWrite() ? 0.5 : 0.15) ? ClaimMode.WRITE : ClaimMode.READ;
            request = ClaimClient.claim(namespace, v.id, "a" + (++sequence), node, mode, v.mode, AttachmentMode.FILE_SYSTEM);
        }
        v.busy = request.requestId();
        return request;
    }

    /**
     * {@code request} was written at {@code sentAt} (the record's timestamp): it is a request of the run, pending
     * until its final answer, which the reader may have read already (then it is taken now).
     */
    ChaosCheck.Request sent(ClaimRequested request, long sentAt) {
        Vol v = volume(request.volumeId());
        ChaosCheck.Request r = new ChaosCheck.Request(request.requestId(), request.volumeId(), request.allocationId(),
                request.nodeId(), request.mode(), v.mode, sentAt);
        requests.add(r);
        sent.put(r.id(), r);
        pending.put(r.id(), r);
        Map<String, ChaosCheck.Answer> done = ChaosCheck.finalAnswers(List.of(r), answers);
        if (done.containsKey(r.id())) {
            answered(r, done.get(r.id()));
        }
        return r;
    }

    /**
     * Writing {@code request} failed: maybe written, maybe not. Not a request of the run; its allocation is uncertain
     * (a claim may be held, a release may have happened): released at the end, no longer counted held.
     */
    void sendFailed(ClaimRequested request) {
        Vol v = volume(request.volumeId());
        if (request.requestId().equals(v.busy)) {
            v.busy = null;
        }
        unsure(v, request.allocationId());
    }

    private void unsure(Vol v, String alloc) {
        v.held.remove(alloc);
        uncertain.add(v.id + "/" + alloc);
    }

    /** A claim-status record as the book keeps it: its claim and its place on the topic. */
    static ChaosCheck.Answer answer(ClaimStatus s, int partition, long offset, long timestamp) {
        return new ChaosCheck.Answer(s.requestId(), s.state(), s.reason(), timestamp, s.volumeId(), s.allocationId(),
                s.nodeId(), s.mode(), partition, offset);
    }

    /**
     * A claim-status record read: kept, and the scheduler's view follows it (a final answer of a pending request;
     * a held claim ended by its node's fence). Returns a note for the operator, if any.
     */
    Optional<String> take(ChaosCheck.Answer a) {
        answers.add(a);
        ChaosCheck.Request r = pending.get(a.requestId());
        if (r != null && (r.isClaim() ? ChaosCheck.CLAIM_FINAL : ChaosCheck.RELEASE_FINAL).contains(a.state())) {
            answered(r, a);
        } else if (r == null && ChaosCheck.fenceEnded(a)) {
            // a held claim ended by its node's fence (issue 19): no longer held, as a real scheduler learns
            ChaosCheck.Request claim = sent.get(a.requestId());
            if (claim != null && ChaosCheck.fenceEnd(volume(claim.volume()).held, claim, a)) {
                return Optional.of(claim.alloc() + " on " + claim.volume() + " ended: " + a.reason());
            }
        }
        return Optional.empty();
    }

    /** A request got its final answer; the view of the volume follows it. */
    private void answered(ChaosCheck.Request r, ChaosCheck.Answer a) {
        if (pending.remove(r.id()) == null) {
            return;
        }
        Vol v = volume(r.volume());
        if (r.id().equals(v.busy)) {
            v.busy = null;
        }
        if (a.state() == ClaimState.READY) {
            v.held.put(r.alloc(), new ChaosCheck.Held(r.node(), r.mode()));
        } else if (a.state() == ClaimState.RELEASED) {
            v.held.remove(r.alloc());
        } else if (r.mode() == ClaimMode.RELEASE) {
            unsure(v, r.alloc()); // a release refused or failed: whether that allocation still holds is not known
        }
    }

    /** What the end releases ({@code {volume, allocation}}): every claim held, uncertain or unanswered. */
    List<String[]> toRelease() {
        List<String[]> all = new ArrayList<>();
        for (Vol v : volumes) {
            v.held.keySet().forEach(alloc -> all.add(new String[] {v.id, alloc}));
        }
        for (String u : uncertain) {
            all.add(u.split("/", 2));
        }
        for (ChaosCheck.Request r : pending.values()) {
            if (r.isClaim()) {
                all.add(new String[] {r.volume(), r.alloc()});
            }
        }
        return all;
    }

    /** The allocations claim-service must still hold on {@code volume} at the end: those the scheduler holds. */
    Set<String> expectedHeld(String volume) {
        return new TreeSet<>(volume(volume).held.keySet());
    }
}
