package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ClaimRulesTest;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.quarkus.test.junit.QuarkusTest;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The same table as {@link ClaimRulesTest} (the five access modes under sequences of read, write and
 * release claims from several allocations and nodes), through claim-service's Kafka inputs and
 * outputs: claim-requested in, claim-status and node-commands out. The other side is the test's
 * {@link Bus}: it publishes plugin-status in place of the plugin registry and answers each mount and
 * unmount with a mount-done in place of the worker. No worker, registry or plugin runs here (the
 * CLI's DemoLifecycleIT runs them all, for the happy path).
 */
@QuarkusTest
class AccessModesThroughKafkaTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    static Stream<Arguments> sequences() {
        // The rows for the five modes (the last row of the unit table needs an unhealthy node instance).
        return ClaimRulesTest.sequences().limit(5);
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("sequences")
    void accessModesThroughKafka(AccessMode mode, String script) {
        String vol = bus.schedulableVolume("e2e", "vol", AccessMode.MULTI_NODE_MULTI_WRITER, "n1", "n2");
        for (String raw : script.split(",")) {
            String[] step = raw.trim().split(" ");
            if (step[0].equals("X")) {
                ClaimRequested release = Bus.release("e2e", vol, step[1]);
                bus.send(release);
                NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
                bus.succeed(unmount);
                bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
                continue;
            }
            ClaimMode claimMode = step[0].equals("R") ? ClaimMode.READ : ClaimMode.WRITE;
            ClaimRequested claim = Bus.claim("e2e", vol, step[1], step[2], claimMode, mode);
            bus.send(claim);
            if (step[3].equals("+")) {
                bus.awaitStatus(claim.requestId(), ClaimState.ACCEPTED);
                NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
                assertTrue(mount.allocationId().equals(step[1]) && mount.nodeId().equals(step[2]), mount.toString());
                assertTrue(mount.readOnly() == (claimMode == ClaimMode.READ), "read claims mount read-only");
                bus.succeed(mount);
                bus.awaitStatus(claim.requestId(), ClaimState.READY);
            } else {
                ClaimStatus rejected = bus.awaitStatus(claim.requestId(), ClaimState.REJECTED);
                assertTrue(rejected.reason().contains(vol) && rejected.reason().contains("allocation " + step[1])
                        && rejected.reason().contains(mode.wire()), rejected.reason());
            }
        }
    }
}
