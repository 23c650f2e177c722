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
        String problem = "secrets were sealed with key 'k-old', which is not in this keyring [k1]";
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
}
