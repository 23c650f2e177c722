package io.csiorchestrator.claims.messaging;

import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import java.util.Set;

/**
 * Which mount-done answers are taken whatever lease epoch they carry. Every other answer of an epoch older than its
 * node's newest is dead-lettered as stale (issue 19 fencing tokens: a node back from a partition cannot overwrite
 * newer state). An answer is applied only to the claim whose current command it names, so a late one of a command
 * the claim has moved past changes nothing either way.
 *
 * <ul>
 *   <li>A controller-publish/-unpublish answer: the storage's result, not the node's mounts (it matches the claim's
 *       current command or nothing). Dropped as stale, it left the claim waiting out the command timeout after every
 *       epoch change of the controller's node (full chaos run of 2026-11-28: claims on node-2 failed after 3 x 2 min
 *       while node-1 changed epochs).</li>
 *   <li>A mount the worker refused before any plugin call ({@link #REFUSED_BEFORE_ANY_CALL}, the worker's
 *       {@code LeaseGate}): it says the node mounted nothing. The worker stamps it with the epoch it holds, which is
 *       the lapsed or fenced one when it refuses for want of a lease; the registry may have granted the next epoch by
 *       the time the answer gets through (full chaos run of 2026-11-29, partition-node-1-in: node-1's refusals of
 *       14:12:24 stamped epoch 2 reached claim-service at 14:12:28, after epoch 3's grant of 14:12:25; dead-lettered,
 *       their claims stayed mounting until node-1's next lapse, 108.9 s after the heal). Taken, the claim sends the
 *       mount again carrying the node's newest epoch (which the worker checks), or after its last attempt fails with an
 *       unmount sent first, the volume held until that teardown is answered: it never readies or frees a claim.</li>
 * </ul>
 * A successful mount or unmount, or a failure after the worker called the plugin, of a stale epoch stays refused; the
 * claim still waiting for that command asks again under the newest epoch ({@code MountAnswers#onStaleAnswer}).
 */
final class StaleAnswers {

    /** The worker's refusals of a command before any plugin call: nothing was done on the node. */
    static final Set<String> REFUSED_BEFORE_ANY_CALL = Set.of("NO_VALID_LEASE", "STALE_LEASE_EPOCH");

    private StaleAnswers() {
    }

    /** True if {@code done} is taken whatever its lease epoch; false if a stale epoch dead-letters it. */
    static boolean takenWhateverEpoch(MountDone done) {
        if (done.kind() == NodeCommandKind.CONTROLLER_PUBLISH || done.kind() == NodeCommandKind.CONTROLLER_UNPUBLISH) {
            return true;
        }
        return done.kind() == NodeCommandKind.MOUNT && Boolean.FALSE.equals(done.success())
                && done.errorCode() != null && REFUSED_BEFORE_ANY_CALL.contains(done.errorCode());
    }
}
