package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The command timeout end to end (ClaimFences.commandTimedOut, driven by the reconciler): a node command that gets
 * no answer within {@code csi.claims.command-timeout} counts as DEADLINE_EXCEEDED. The other tests run with a
 * timeout as long as {@link Bus#WAIT}, so it never fires there; this class shortens it with a profile (one
 * Quarkus restart for all timeout cases).
 */
@QuarkusTest
@TestProfile(ClaimCommandTimeoutTest.ShortCommandTimeout.class)
class ClaimCommandTimeoutTest {

    /** The command timeout short enough to fire well within {@link Bus#WAIT}, long enough for the test to answer in time. */
    public static class ShortCommandTimeout implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // Both spellings: application.properties sets the %test one.
            return Map.of("csi.claims.command-timeout", "5s", "%test.csi.claims.command-timeout", "5s");
        }
    }

    static final String NO_ANSWER = "DEADLINE_EXCEEDED: no answer from the node's worker within the command timeout";

    final Bus bus = new Bus();

    @Inject
    ClaimSettings settings;

    @AfterEach
    void close() {
        bus.close();
    }

    private static ClaimRequested write(String vol) {
        return Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
    }

    /**
     * An unanswered mount times out and is sent again as a new command (the claim records the timeout as its last
     * error); the answer to the new command makes the claim READY.
     */
    @Test
    void anUnansweredMountTimesOutAndIsSentAgainAsANewCommand() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");
        ClaimRequested w = write(vol);
        bus.send(w);
        NodeCommand first = bus.awaitCommand(vol, NodeCommandKind.MOUNT); // never answered
        NodeCommand second = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertNotEquals(first.commandId(), second.commandId());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims[0].lastError", equalTo("mount failed: " + NO_ANSWER)).body("claims[0].attempt", equalTo(2));
        bus.succeed(second);
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.READY), bus.statuses(w.requestId()).stream().map(ClaimStatus::state).toList());
    }

    /**
     * A mount that never gets an answer fails the claim after max-publish-attempts timeouts ("gave up after N
     * attempts") and is rolled back with an unmount; the claim ends as failed.
     */
    @Test
    void aMountThatNeverGetsAnAnswerFailsTheClaimAndRollsItBack() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");
        ClaimRequested w = write(vol);
        bus.send(w);
        int attempts = settings.maxPublishAttempts();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < attempts; i++) {
            ids.add(bus.awaitCommand(vol, NodeCommandKind.MOUNT).commandId()); // never answered
        }
        assertEquals(attempts, ids.stream().distinct().count(), "a new command id per attempt: " + ids);
        assertEquals("mount failed: " + NO_ANSWER + " (gave up after " + attempts + " attempts)",
                bus.awaitStatus(w.requestId(), ClaimState.FAILED).reason());
        NodeCommand cleanup = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        bus.succeed(cleanup);
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims", hasSize(0)).body("pastClaims[0].state", equalTo("failed")));
        assertEquals(attempts, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.MOUNT).count());
    }

    /**
     * An unanswered unmount is never declared done by the timeout (the volume may still be mounted): it is sent
     * again as a new command, and the release ends only with an answer.
     */
    @Test
    void anUnansweredUnmountIsSentAgainNotDeclaredDone() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");
        ClaimRequested w = write(vol);
        bus.send(w);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        NodeCommand first = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT); // never answered
        NodeCommand second = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertNotEquals(first.commandId(), second.commandId());
        // not released while the unmount is unanswered: only releasing statuses (a resend may repeat it with the
        // reason it waits: the node holds no lease, so it is never assumed detached by time)
        List<ClaimState> seen = bus.statuses(release.requestId()).stream().map(ClaimStatus::state).toList();
        assertFalse(seen.isEmpty(), "the release was answered releasing");
        assertEquals(Set.of(ClaimState.RELEASING), Set.copyOf(seen), "not released while the unmount is unanswered");
        bus.succeed(second);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
    }
}
