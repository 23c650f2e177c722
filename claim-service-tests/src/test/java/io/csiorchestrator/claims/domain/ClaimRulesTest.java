package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ClaimRules.Accept;
import io.csiorchestrator.claims.domain.ClaimRules.AlreadyHeld;
import io.csiorchestrator.claims.domain.ClaimRules.Decision;
import io.csiorchestrator.claims.domain.ClaimRules.HeldClaim;
import io.csiorchestrator.claims.domain.ClaimRules.NodeFacts;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ClaimRules.Reject;
import io.csiorchestrator.claims.domain.ClaimRules.Request;
import io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.MountSupport;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

public class ClaimRulesTest {

    /**
     * The allocation of the single-request cases: letters only, so that the kebab-case pattern of a reason
     * code cannot hide it, and long enough to be seen if a code leaked it.
     */
    static final String ALLOC = "quokka";

    static final PluginFacts HEALTHY = new PluginFacts("p", true, false, List.of(),
            Map.of("n1", new NodeFacts("n1", "ext-1", true, Map.of("zone", "a")),
                    "n2", new NodeFacts("n2", "ext-2", true, Map.of("zone", "a")),
                    "n3", new NodeFacts("n3", "ext-3", false, Map.of("zone", "a"))));

    /**
     * One step of a sequence: {@code R alloc node}, {@code W alloc node}, {@code X alloc} (release),
     * and whether the claim is accepted ('+') or rejected ('-'). Releases always succeed.
     */
    public static Stream<Arguments> sequences() {
        return Stream.of(
                // single-node-reader-only: readers on one node only, never a writer
                Arguments.of(AccessMode.SINGLE_NODE_READER_ONLY, "R a1 n1 +, R a2 n1 +, R a3 n2 -, W a4 n1 -, X a1, X a2, R a3 n2 +"),
                // single-node-writer: one writer, readers beside it on the same node, nothing on another node
                Arguments.of(AccessMode.SINGLE_NODE_WRITER, "W a1 n1 +, W a2 n1 -, R a3 n1 +, R a4 n2 -, W a5 n2 -, X a1, W a2 n1 +, X a2, X a3, W a5 n2 +"),
                // multi-node-reader-only: readers anywhere, never a writer
                Arguments.of(AccessMode.MULTI_NODE_READER_ONLY, "R a1 n1 +, R a2 n2 +, W a3 n1 -, W a4 n2 -, X a1, X a2, W a3 n1 -, R a3 n1 +"),
                // multi-node-single-writer: readers anywhere, one writer anywhere
                Arguments.of(AccessMode.MULTI_NODE_SINGLE_WRITER, "R a1 n1 +, W a2 n2 +, W a3 n1 -, R a4 n2 +, X a2, W a3 n1 +, W a5 n2 -, X a3, W a5 n2 +"),
                // multi-node-multi-writer: writers and readers anywhere
                Arguments.of(AccessMode.MULTI_NODE_MULTI_WRITER, "W a1 n1 +, W a2 n2 +, R a3 n1 +, W a4 n1 +, X a1, X a2, X a3, X a4, W a5 n2 +"),
                // single-node-single-writer (ReadWriteOncePod): one writer allocation, even on the same node; readers
                // beside it on that node; nothing on another node
                Arguments.of(AccessMode.SINGLE_NODE_SINGLE_WRITER, "W a1 n1 +, W a2 n1 -, R a3 n1 +, W a4 n2 -, X a1, W a2 n1 +, X a2, X a3, W a4 n2 +"),
                // single-node-multi-writer: several writer allocations on the one node, none on another
                Arguments.of(AccessMode.SINGLE_NODE_MULTI_WRITER, "W a1 n1 +, W a2 n1 +, R a3 n1 +, W a4 n2 -, R a5 n2 -, X a1, X a2, X a3, W a4 n2 +"),
                // unhealthy node instance: every claim on it is rejected, whatever the mode
                Arguments.of(AccessMode.MULTI_NODE_MULTI_WRITER, "R a1 n3 -, W a2 n3 -, R a3 n9 -, W a4 n1 +"));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("sequences")
    void accessModesUnderSequencesOfClaims(AccessMode mode, String script) {
        List<HeldClaim> held = new ArrayList<>();
        for (String raw : script.split(",")) {
            String[] step = raw.trim().split(" ");
            if (step[0].equals("X")) {
                assertTrue(held.removeIf(c -> c.allocationId().equals(step[1])), "release of a held claim: " + raw);
                continue;
            }
            ClaimMode claim = step[0].equals("R") ? ClaimMode.READ : ClaimMode.WRITE;
            VolumeFacts volume = volume(mode, held.isEmpty() ? null : mode, held);
            Decision d = ClaimRules.decide(volume, HEALTHY,
                    new Request(step[1], step[2], claim, mode, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false));
            if (step[3].equals("+")) {
                assertInstanceOf(Accept.class, d, raw + " under " + mode + " with " + held + ": " + d);
                held.add(new HeldClaim(step[1], step[2], claim));
            } else {
                Reject reject = assertInstanceOf(Reject.class, d, raw + " under " + mode + " with " + held);
                assertTrue(reject.reason().contains("volume ns/vol"), reject.reason());
                assertTrue(reject.reason().contains("allocation " + step[1]), reject.reason());
                assertTrue(reject.reason().contains(mode.wire()), reject.reason());
                assertTrue(reject.code().matches("[a-z]+(-[a-z]+)*"), reject.code());
            }
        }
    }

    @Test
    void theFirstClaimFixesTheAccessModeUntilNoClaimIsLeft() {
        VolumeFacts volume = volume(AccessMode.MULTI_NODE_MULTI_WRITER, AccessMode.MULTI_NODE_READER_ONLY,
                List.of(new HeldClaim("a1", "n1", ClaimMode.READ)));
        Decision d = ClaimRules.decide(volume, HEALTHY, new Request("a2", "n2", ClaimMode.WRITE,
                AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false));
        assertTrue(((Reject) d).reason().contains("current claims use access mode multi-node-reader-only"), d.toString());
        VolumeFacts empty = volume(AccessMode.MULTI_NODE_MULTI_WRITER, null, List.of());
        assertInstanceOf(Accept.class, ClaimRules.decide(empty, HEALTHY, new Request("a2", "n2", ClaimMode.WRITE,
                AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false)));
    }

    @Test
    void capabilityCoversLessPermissiveModesOnly() {
        assertTrue(ClaimRules.capabilityCovers(AccessMode.MULTI_NODE_MULTI_WRITER, AccessMode.SINGLE_NODE_READER_ONLY));
        assertTrue(ClaimRules.capabilityCovers(AccessMode.MULTI_NODE_SINGLE_WRITER, AccessMode.SINGLE_NODE_WRITER));
        assertFalse(ClaimRules.capabilityCovers(AccessMode.SINGLE_NODE_WRITER, AccessMode.MULTI_NODE_READER_ONLY));
        assertFalse(ClaimRules.capabilityCovers(AccessMode.MULTI_NODE_READER_ONLY, AccessMode.SINGLE_NODE_WRITER));
        assertFalse(ClaimRules.capabilityCovers(AccessMode.MULTI_NODE_SINGLE_WRITER, AccessMode.MULTI_NODE_MULTI_WRITER));
        // the CSI 1.5 single-node modes: single-writer is as much as single-node-writer, multi-writer more
        assertTrue(ClaimRules.capabilityCovers(AccessMode.SINGLE_NODE_WRITER, AccessMode.SINGLE_NODE_SINGLE_WRITER));
        assertFalse(ClaimRules.capabilityCovers(AccessMode.SINGLE_NODE_WRITER, AccessMode.SINGLE_NODE_MULTI_WRITER));
        assertTrue(ClaimRules.capabilityCovers(AccessMode.SINGLE_NODE_MULTI_WRITER, AccessMode.SINGLE_NODE_SINGLE_WRITER));
        assertTrue(ClaimRules.capabilityCovers(AccessMode.MULTI_NODE_MULTI_WRITER, AccessMode.SINGLE_NODE_MULTI_WRITER));
        assertFalse(ClaimRules.capabilityCovers(AccessMode.SINGLE_NODE_MULTI_WRITER, AccessMode.MULTI_NODE_SINGLE_WRITER));
        assertFalse(ClaimRules.capabilityCovers(AccessMode.MULTI_NODE_SINGLE_WRITER, AccessMode.SINGLE_NODE_MULTI_WRITER));
        for (AccessMode m : AccessMode.values()) {
            assertTrue(ClaimRules.capabilityCovers(m, m));
        }
    }

    @Test
    void mountSupportAttachmentAndMountOptionsAreCheckedOnArrival() {
        VolumeFacts block = new VolumeFacts("ns", "vol", "p", AccessMode.SINGLE_NODE_WRITER, AttachmentMode.BLOCK_DEVICE,
                null, Map.of(), false, List.of());
        assertReject(block, new Request(ALLOC, "n1", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.BLOCK_DEVICE,
                MountSupport.HOST_ONLY, false), "mounts host paths only");
        assertReject(block, new Request(ALLOC, "n1", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.BLOCK_DEVICE,
                MountSupport.ALL, true), "takes no mount options");
        assertReject(block, new Request(ALLOC, "n1", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                MountSupport.ALL, false), "attachment mode block-device");
        assertInstanceOf(Accept.class, ClaimRules.decide(block, HEALTHY, new Request(ALLOC, "n1", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.BLOCK_DEVICE, MountSupport.ALL, false)));
        VolumeFacts fs = volume(AccessMode.SINGLE_NODE_WRITER, null, List.of());
        assertReject(fs, new Request(ALLOC, "n1", ClaimMode.READ, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                MountSupport.NONE, false), "cannot mount volumes");
        assertInstanceOf(Accept.class, ClaimRules.decide(fs, HEALTHY, new Request(ALLOC, "n1", ClaimMode.READ,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.HOST_ONLY, true)));
    }

    @Test
    void sealedMountFlagsThatCannotBeUsedRejectTheClaimNamingTheProblem() {
        VolumeFacts fs = volume(AccessMode.SINGLE_NODE_WRITER, null, List.of());
        String problem = "secrets sealed for claim-service with key 'k-old', which claim-service does not hold";
        Request unsealable = new Request(ALLOC, "n1", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                MountSupport.ALL, true, problem);
        assertReject(fs, unsealable, "sealedMountFlags cannot be used: " + problem);
        assertEquals("mount-flags-unsealable", ((Reject) ClaimRules.decide(fs, HEALTHY, unsealable)).code());
        assertInstanceOf(Accept.class, ClaimRules.decide(fs, HEALTHY, new Request(ALLOC, "n1", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, true, null)));
    }

    @Test
    void pluginHealthControllerAndTopology() {
        VolumeFacts fs = volume(AccessMode.MULTI_NODE_MULTI_WRITER, null, List.of());
        Request r = new Request(ALLOC, "n1", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                MountSupport.ALL, false);
        assertReject(fs, PluginFacts.unknown("p"), r, "plugin p is not registered");
        PluginFacts noController = new PluginFacts("p", true, true, List.of(), HEALTHY.nodes());
        assertReject(fs, noController, r, "no healthy controller");
        PluginFacts withController = new PluginFacts("p", true, true, List.of("n2"), HEALTHY.nodes());
        assertInstanceOf(Accept.class, ClaimRules.decide(fs, withController, r));
        VolumeFacts zoned = new VolumeFacts("ns", "vol", "p", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                null, Map.of("zone", "b"), false, List.of());
        assertReject(zoned, HEALTHY, r, "outside the volume's topology");
        assertTrue(ClaimRules.schedulable(fs, HEALTHY));
        assertFalse(ClaimRules.schedulable(fs, noController));
    }

    /**
     * Issue 14 item 4: a claim on a node whose plugin instance's topology (NodeGetInfo's segments) does not match
     * the volume's accessible topology is rejected with a reason that names both; a node in the topology is accepted.
     */
    @Test
    void aClaimOutsideTheVolumesTopologyNamesTheVolumesAndTheNodesTopology() {
        VolumeFacts zoned = new VolumeFacts("ns", "vol", "p", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                null, Map.of("zone", "b"), false, List.of());
        Request onN1 = new Request(ALLOC, "n1", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                MountSupport.ALL, false);
        assertReject(zoned, HEALTHY, onN1, "volume's topology {zone=b}");
        assertReject(zoned, HEALTHY, onN1, "node n1's plugin instance has {zone=a}");
        VolumeFacts inZoneA = new VolumeFacts("ns", "vol", "p", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                null, Map.of("zone", "a"), false, List.of());
        assertInstanceOf(Accept.class, ClaimRules.decide(inZoneA, HEALTHY, onN1));
    }

    @Test
    void aRepeatedClaimIsAlreadyHeldAndADeletingVolumeTakesNone() {
        VolumeFacts volume = volume(AccessMode.MULTI_NODE_MULTI_WRITER, AccessMode.MULTI_NODE_MULTI_WRITER,
                List.of(new HeldClaim("a1", "n1", ClaimMode.WRITE)));
        assertInstanceOf(AlreadyHeld.class, ClaimRules.decide(volume, HEALTHY, new Request("a1", "n1", ClaimMode.WRITE,
                AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false)));
        assertReject(volume, new Request("a1", "n1", ClaimMode.READ, AccessMode.MULTI_NODE_MULTI_WRITER,
                AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false), "already holds a write claim");
        VolumeFacts deleting = new VolumeFacts("ns", "vol", "p", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                null, Map.of(), true, List.of());
        assertReject(deleting, new Request("a2", "n1", ClaimMode.READ, AccessMode.MULTI_NODE_MULTI_WRITER,
                AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false), "being deleted");
    }

    static final java.time.Instant T0 = java.time.Instant.parse("2026-11-24T17:00:00Z");
    static final java.time.Duration GRACE = java.time.Duration.ofSeconds(30);

    /** {@link #HEALTHY} with n1's instance, healthy before, unhealthy since {@code since}. */
    private static PluginFacts n1AwaySince(java.time.Instant since) {
        return new PluginFacts("p", true, false, List.of(),
                Map.of("n1", new NodeFacts("n1", "ext-1", false, Map.of("zone", "a")),
                        "n2", new NodeFacts("n2", "ext-2", true, Map.of("zone", "a"))),
                Map.of("n1", since));
    }

    /**
     * A claim on a node whose plugin instance was healthy and has been away for less than the grace waits (until the
     * grace ends, counted from when the instance went away), once every other rule accepts it; past the grace, or for
     * an instance never healthy, it is rejected, the reason naming plugin, node and how long. A claim the other rules
     * refuse is refused at once, not after the wait. The instance missing or its plugin removed counts the same.
     */
    @Test
    void aClaimOnANodeWhosePluginIsBrieflyAwayWaitsAndIsRejectedOnlyPastTheGrace() {
        VolumeFacts volume = volume(AccessMode.SINGLE_NODE_WRITER, null, List.of());
        Request write = new Request(ALLOC, "n1", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                MountSupport.ALL, false);
        java.time.Instant away = T0.minusSeconds(10);

        ClaimRules.WaitForPlugin wait = assertInstanceOf(ClaimRules.WaitForPlugin.class, ClaimRules.decide(volume,
                n1AwaySince(away), write, new ClaimRules.PluginGrace(T0, GRACE)));
        assertEquals(away, wait.since());
        assertEquals(away.plus(GRACE), wait.until());
        assertTrue(wait.reason().contains("plugin p on node n1, away for 10s") && wait.reason().contains("grace of 30s"),
                wait.reason());

        Reject gone = assertInstanceOf(Reject.class, ClaimRules.decide(volume, n1AwaySince(away), write,
                new ClaimRules.PluginGrace(away.plus(GRACE), GRACE)));
        assertEquals(ClaimRules.PLUGIN_GONE, gone.code());
        assertTrue(gone.reason().contains("rejected: plugin p on node n1 has been unavailable for 30s, longer than the grace of 30s"),
                gone.reason());
        assertLowCardinalityCode(gone, write);

        // never healthy: nothing to wait for (no outage recorded)
        assertEquals("node-unhealthy", assertInstanceOf(Reject.class, ClaimRules.decide(volume, HEALTHY,
                new Request(ALLOC, "n3", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                        MountSupport.ALL, false), new ClaimRules.PluginGrace(T0, GRACE))).code());
        // without a grace a plugin away is away, as before
        assertEquals("node-unhealthy", assertInstanceOf(Reject.class, ClaimRules.decide(volume, n1AwaySince(away), write)).code());
        // another rule refuses it: refused now
        VolumeFacts held = volume(AccessMode.SINGLE_NODE_WRITER, AccessMode.SINGLE_NODE_WRITER,
                List.of(new HeldClaim("other", "n1", ClaimMode.WRITE)));
        assertEquals("single-writer-held", assertInstanceOf(Reject.class, ClaimRules.decide(held, n1AwaySince(away), write,
                new ClaimRules.PluginGrace(T0, GRACE))).code());
        // the instance missing, or the whole plugin removed (tombstone), after being healthy: waits too
        PluginFacts missing = new PluginFacts("p", true, false, List.of(), Map.of(), Map.of("n1", away));
        assertInstanceOf(ClaimRules.WaitForPlugin.class, ClaimRules.decide(volume, missing, write, new ClaimRules.PluginGrace(T0, GRACE)));
        assertInstanceOf(ClaimRules.WaitForPlugin.class, ClaimRules.decide(volume,
                PluginFacts.unknown("p").withOutages(Map.of("n1", away)), write, new ClaimRules.PluginGrace(T0, GRACE)));
    }

    /**
     * A node step of a claim and its plugin away ({@link ClaimRules#pluginOutage}), as a table: the outage counts from
     * the earliest of the claim's own wait, the instance's outage and a failure now; within the grace the step waits
     * until the grace ends, past it it is given up with plugin, node and how long; a wait that comes due with the
     * instance healthy proceeds; a failure while the instance still looks healthy is tried again after 1 s, then
     * after as long as it has waited, never past the grace.
     */
    @Test
    void aStepWhosePluginIsAwayWaitsWithinTheGraceAndIsGivenUpPastIt() {
        java.time.Duration retry = java.time.Duration.ofSeconds(1);
        record Case(String name, PluginFacts plugin, java.time.Instant waitingSince, boolean failedNow, java.time.Instant now,
                    Class<?> outcome, java.time.Instant until, String reasonPart) {
        }
        PluginFacts healthy = HEALTHY;
        List<Case> cases = List.of(
                new Case("failed, instance away 5 s", n1AwaySince(T0.minusSeconds(5)), null, true, T0,
                        ClaimRules.KeepWaiting.class, T0.plusSeconds(25), "away for 5s, up to the grace of 30s"),
                new Case("failed, own wait older than the outage", n1AwaySince(T0.minusSeconds(5)), T0.minusSeconds(8), true, T0,
                        ClaimRules.KeepWaiting.class, T0.plusSeconds(22), "away for 8s"),
                new Case("failed, instance away past the grace", n1AwaySince(T0.minusSeconds(31)), null, true, T0,
                        ClaimRules.PluginGone.class, null, "plugin p on node n1 has been unavailable for 31s, longer than the grace of 30s"),
                new Case("due, still away past the grace", n1AwaySince(T0.minusSeconds(2)), T0.minusSeconds(30), false, T0,
                        ClaimRules.PluginGone.class, null, "unavailable for 30s"),
                new Case("due, still away within the grace", n1AwaySince(T0.minusSeconds(2)), T0.minusSeconds(3), false, T0,
                        ClaimRules.KeepWaiting.class, T0.plusSeconds(27), "waiting for plugin p on node n1"),
                new Case("due, healthy again", healthy, T0.minusSeconds(3), false, T0, ClaimRules.Proceed.class, null, null),
                new Case("failed, still looks healthy: again in 1 s", healthy, null, true, T0,
                        ClaimRules.KeepWaiting.class, T0.plusSeconds(1), "did not answer; retrying in 1s"),
                new Case("failed again, looks healthy, waited 4 s: again in 4 s", healthy, T0.minusSeconds(4), true, T0,
                        ClaimRules.KeepWaiting.class, T0.plusSeconds(4), "retrying in 4s"),
                new Case("failed again, looks healthy, waited 20 s: not past the grace", healthy, T0.minusSeconds(20), true, T0,
                        ClaimRules.KeepWaiting.class, T0.plusSeconds(10), "retrying in 10s"),
                new Case("failed again, looks healthy, waited 30 s", healthy, T0.minusSeconds(30), true, T0,
                        ClaimRules.PluginGone.class, null, "unavailable for 30s"));
        for (Case c : cases) {
            ClaimRules.PluginOutage outcome = ClaimRules.pluginOutage("p", "n1", c.plugin(), c.waitingSince(), c.failedNow(),
                    new ClaimRules.PluginGrace(c.now(), GRACE), retry);
            assertInstanceOf(c.outcome(), outcome, c.name() + ": " + outcome);
            if (outcome instanceof ClaimRules.KeepWaiting w) {
                assertEquals(c.until(), w.until(), c.name());
                assertTrue(w.reason().contains(c.reasonPart()), c.name() + ": " + w.reason());
            } else if (outcome instanceof ClaimRules.PluginGone g) {
                assertEquals(ClaimRules.PLUGIN_GONE, g.code(), c.name());
                assertTrue(g.reason().contains(c.reasonPart()), c.name() + ": " + g.reason());
            }
        }
    }

    private static void assertReject(VolumeFacts v, Request r, String fragment) {
        assertReject(v, HEALTHY, r, fragment);
    }

    private static void assertReject(VolumeFacts v, PluginFacts p, Request r, String fragment) {
        Decision d = ClaimRules.decide(v, p, r);
        Reject reject = assertInstanceOf(Reject.class, d, d.toString());
        assertTrue(reject.reason().contains(fragment), reject.reason());
        assertTrue(reject.reason().contains("allocation " + r.allocationId()), reject.reason());
        assertEquals(true, reject.reason().contains(r.mode().wire()), reject.reason());
        assertLowCardinalityCode(reject, r);
    }

    /** A reject's metric reason code: kebab-case words, never an id from the request. */
    private static void assertLowCardinalityCode(Reject reject, Request r) {
        assertTrue(reject.code() != null && reject.code().matches("[a-z]+(-[a-z]+)*"), reject.code());
        assertFalse(reject.code().contains(r.allocationId()), "allocation id " + r.allocationId() + " in the code " + reject.code());
    }

    private static VolumeFacts volume(AccessMode capability, AccessMode fixed, List<HeldClaim> held) {
        return new VolumeFacts("ns", "vol", "p", capability, AttachmentMode.FILE_SYSTEM, fixed, Map.of("zone", "a"), false,
                List.copyOf(held));
    }

    /** The controller publish is read-only exactly for the reader-only access modes, whatever the claim's mode. */
    @Test
    void theControllerPublishIsReadOnlyOnlyForReaderOnlyAccessModes() {
        for (AccessMode mode : AccessMode.values()) {
            boolean readerOnly = mode == AccessMode.SINGLE_NODE_READER_ONLY || mode == AccessMode.MULTI_NODE_READER_ONLY;
            assertEquals(readerOnly, ClaimRules.controllerPublishReadOnly(mode), mode.wire());
        }
    }

    /**
     * A claim that conflicts only with a claim whose release is under way (issue 19: the previous writer's release may
     * wait for its node's lease) is pending, not rejected, naming that claim; a conflict with a claim not being released
     * is still a rejection, even next to a releasing one; a reader of a multi-node mode is not held up at all.
     */
    @Test
    void aClaimConflictingOnlyWithAReleaseUnderWayIsPendingNotRejected() {
        Request w2 = new Request("b1", "n2", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                MountSupport.ALL, false);
        VolumeFacts releasing = volume(AccessMode.SINGLE_NODE_WRITER, AccessMode.SINGLE_NODE_WRITER,
                List.of(new HeldClaim("a1", "n1", ClaimMode.WRITE, true)));
        ClaimRules.WaitForRelease pending = assertInstanceOf(ClaimRules.WaitForRelease.class,
                ClaimRules.decide(releasing, HEALTHY, w2));
        assertEquals("a1", pending.blocker().allocationId());
        assertTrue(pending.reason().endsWith(" pending: access mode single-node-writer allows a single writer and"
                + " allocation a1 on node n1 holds the write claim, being released"), pending.reason());

        VolumeFacts held = volume(AccessMode.SINGLE_NODE_WRITER, AccessMode.SINGLE_NODE_WRITER,
                List.of(new HeldClaim("a1", "n1", ClaimMode.WRITE, false)));
        assertEquals("single-writer-held", assertInstanceOf(Reject.class, ClaimRules.decide(held, HEALTHY, w2)).code());
        // single-node: a reader on n1 being released, another reader on n1 not: rejected for the one that stays
        VolumeFacts mixed = volume(AccessMode.SINGLE_NODE_WRITER, AccessMode.SINGLE_NODE_WRITER,
                List.of(new HeldClaim("a1", "n1", ClaimMode.WRITE, true), new HeldClaim("r1", "n1", ClaimMode.READ, false)));
        Reject stays = assertInstanceOf(Reject.class, ClaimRules.decide(mixed, HEALTHY, w2));
        assertEquals("single-node-held", stays.code());
        assertTrue(stays.reason().contains("allocation r1"), stays.reason());
        // multi-node-single-writer: a second writer waits, a reader elsewhere goes on
        VolumeFacts mnsw = volume(AccessMode.MULTI_NODE_SINGLE_WRITER, AccessMode.MULTI_NODE_SINGLE_WRITER,
                List.of(new HeldClaim("a1", "n1", ClaimMode.WRITE, true)));
        assertInstanceOf(ClaimRules.WaitForRelease.class, ClaimRules.decide(mnsw, HEALTHY, new Request("b1", "n2",
                ClaimMode.WRITE, AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false)));
        assertInstanceOf(ClaimRules.Accept.class, ClaimRules.decide(mnsw, HEALTHY, new Request("c1", "n2",
                ClaimMode.READ, AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM, MountSupport.ALL, false)));
    }
}
