package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import jakarta.persistence.Column;
import jakarta.persistence.Convert;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import jakarta.persistence.Transient;
import io.csiorchestrator.claims.Tx;
import java.time.Instant;

/**
 * A claim (current or past) and the checkpoint of its state machine. A claim transaction reads and writes it through
 * {@link ClaimStore} (prepared statements, issue 36 item 3); as a Hibernate entity it is only read, by the REST paths.
 */
@Entity
@Table(name = "claims")
public class ClaimEntity extends PanacheEntityBase {

    @Id
    @Column(name = "claim_id")
    public String claimId;
    @Column(name = "volume_key")
    public String volumeKey;
    public String namespace;
    @Column(name = "volume_id")
    public String volumeId;
    @Column(name = "allocation_id")
    public String allocationId;
    @Column(name = "node_id")
    public String nodeId;
    /** read or write (a PostgreSQL enum of the wire values). */
    @Convert(converter = WireColumns.ClaimModeColumn.class)
    public ClaimMode mode;
    @Column(name = "request_id")
    public String requestId;
    @Column(name = "release_request_id")
    public String releaseRequestId;
    @Column(name = "access_mode")
    @Convert(converter = WireColumns.AccessModeColumn.class)
    public AccessMode accessMode;
    @Column(name = "attachment_mode")
    @Convert(converter = WireColumns.AttachmentModeColumn.class)
    public AttachmentMode attachmentMode;
    @Column(name = "read_only")
    public boolean readOnly;
    @Column(name = "fs_type")
    public String fsType;
    @Column(name = "sealed_json")
    public String sealedJson;
    /** The state machine's phase (a PostgreSQL enum of the names). */
    @Enumerated(EnumType.STRING)
    public Phase phase;
    public int attempt;
    @Column(name = "controller_required")
    public boolean controllerRequired;
    @Column(name = "controller_published")
    public boolean controllerPublished;
    @Column(name = "release_requested")
    public boolean releaseRequested;
    @Column(name = "rolling_back")
    public boolean rollingBack;
    public boolean past;
    @Column(name = "command_id")
    public String commandId;
    @Column(name = "command_node_id")
    public String commandNodeId;
    @Column(name = "command_deadline")
    public Instant commandDeadline;
    @Column(name = "retry_at")
    public Instant retryAt;
    /** Since when the claim (or its current node step) waits for its node's plugin instance; null when not waiting. */
    @Column(name = "plugin_wait_since")
    public Instant pluginWaitSince;
    /** The node's lease epoch when the mount was sent (the fencing token); null when no lease was known. */
    @Column(name = "lease_epoch")
    public Long leaseEpoch;
    /** The volume's write generation when this write claim was granted (the claim's fencing token). */
    @Column(name = "claim_generation")
    public Long claimGeneration;
    /** The fence wait a release announced last ('lease-valid', 'lapsed', 'no-lease', 'manual'); each is announced once. */
    @Column(name = "fence_wait")
    public String fenceWait;
    /** 'failed' once a storage fence of this claim failed (tried once per claim); null otherwise. */
    @Column(name = "storage_fence")
    public String storageFence;
    /** Why the node side was assumed detached (lapse, fence report, operator), for the RELEASED after the controller-unpublish. */
    @Column(name = "detach_note")
    public String detachNote;
    @Column(name = "external_node_id")
    public String externalNodeId;
    @Column(name = "controller_node_id")
    public String controllerNodeId;
    @Column(name = "publish_context_json")
    public String publishContextJson;
    @Column(name = "host_path")
    public String hostPath;
    @Column(name = "last_error")
    public String lastError;
    @Column(name = "created_at")
    public Instant createdAt;
    @Column(name = "updated_at")
    public Instant updatedAt;
    @Column(name = "ended_at")
    public Instant endedAt;
    /** When the claim was requested (the claim-requested event's time): the start of the claim latency. */
    @Column(name = "requested_at")
    public Instant requestedAt;
    /** When its release was requested: the start of the release latency. */
    @Column(name = "release_requested_at")
    public Instant releaseRequestedAt;
    /** The transaction (and the input that caused it) this claim is being changed in; not stored. */
    @Transient
    public Tx tx;

    @Override
    public String toString() {
        return "Claim[" + claimId + " " + volumeKey + " alloc=" + allocationId + " node=" + nodeId + " " + mode + " " + phase + "]";
    }
}
