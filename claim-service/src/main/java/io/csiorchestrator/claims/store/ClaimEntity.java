package io.csiorchestrator.claims.store;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.claims.Tx;
import java.time.Instant;

/**
 * A claim (current or past) and the checkpoint of its state machine: a row of {@code claims}, read and written through
 * {@link ClaimStore} and {@link ClaimTables} (prepared statements, issue 36 item 3).
 */
public class ClaimEntity {

    public String claimId;
    public String volumeKey;
    public String namespace;
    public String volumeId;
    public String allocationId;
    public String nodeId;
    /** read or write (a PostgreSQL enum of the wire values). */
    public ClaimMode mode;
    public String requestId;
    public String releaseRequestId;
    public AccessMode accessMode;
    public AttachmentMode attachmentMode;
    public boolean readOnly;
    public String fsType;
    public String sealedJson;
    /** The state machine's phase (a PostgreSQL enum of the names). */
    public Phase phase;
    public int attempt;
    public boolean controllerRequired;
    public boolean controllerPublished;
    public boolean releaseRequested;
    public boolean rollingBack;
    public boolean past;
    public String commandId;
    public String commandNodeId;
    public Instant commandDeadline;
    public Instant retryAt;
    /** Since when the claim (or its current node step) waits for its node's plugin instance; null when not waiting. */
    public Instant pluginWaitSince;
    /** The node's lease epoch when the mount was sent (the fencing token); null when no lease was known. */
    public Long leaseEpoch;
    /** The volume's write generation when this write claim was granted (the claim's fencing token). */
    public Long claimGeneration;
    /** The fence wait a release announced last ('lease-valid', 'lapsed', 'no-lease', 'manual'); each is announced once. */
    public String fenceWait;
    /** 'failed' once a storage fence of this claim failed (tried once per claim); null otherwise. */
    public String storageFence;
    /** Why the node side was assumed detached (lapse, fence report, operator), for the RELEASED after the controller-unpublish. */
    public String detachNote;
    public String externalNodeId;
    public String controllerNodeId;
    public String publishContextJson;
    public String hostPath;
    public String lastError;
    public Instant createdAt;
    public Instant updatedAt;
    public Instant endedAt;
    /** When the claim was requested (the claim-requested event's time): the start of the claim latency. */
    public Instant requestedAt;
    /** When its release was requested: the start of the release latency. */
    public Instant releaseRequestedAt;
    /** The transaction (and the input that caused it) this claim is being changed in; not stored. */
    public Tx tx;

    @Override
    public String toString() {
        return "Claim[" + claimId + " " + volumeKey + " alloc=" + allocationId + " node=" + nodeId + " " + mode + " " + phase + "]";
    }
}
