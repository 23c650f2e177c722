package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;

/**
 * A node's actual state, for anti-entropy: every volume its worker has staged or published, from its local record
 * checked against the mount table, taken at {@code takenAt}. Sent by the worker on start and on a schedule; the
 * newest report of a node supersedes the older ones. Topic {@code node-state}, compacted, key: node id. No secrets
 * and no mount flags: only ids, modes, states and the command ids that made each publication.
 *
 * @param sequence increases with every report of one worker process (from 1 at its start)
 * @param takenAt  when the worker began reading its record (before the mount table): state older than this is in it
 * @param volumes  every volume the node holds something of (a staging, a publication, a controller publication)
 * @param leaseEpoch the worker's lease epoch when it took the report; null from a worker that predates leases
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record NodeStateReported(
        String nodeId,
        Long sequence,
        Instant takenAt,
        List<VolumeState> volumes,
        Long leaseEpoch) implements ContractEvent {

    /** At most this many volumes in one report. */
    public static final int MAX_VOLUMES = 10_000;

    public NodeStateReported {
        volumes = Copies.list(volumes);
    }

    /** A report without lease epoch. */
    public NodeStateReported(String nodeId, Long sequence, Instant takenAt, List<VolumeState> volumes) {
        this(nodeId, sequence, takenAt, volumes, null);
    }

    /** This report with the worker's lease epoch. */
    public NodeStateReported withLeaseEpoch(Long epoch) {
        return new NodeStateReported(nodeId, sequence, takenAt, volumes, epoch);
    }

    /**
     * One volume on the node.
     *
     * @param staging               its one staging path's state ({@code none} when the plugin does not stage)
     * @param publications          one per allocation using it on this node
     * @param controllerPublishedTo external node ids this node's controller instance published the volume to
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record VolumeState(String namespace, String volumeId, String pluginId, String externalVolumeId,
                              ReportedMount staging, List<Publication> publications,
                              List<String> controllerPublishedTo) {
        public VolumeState {
            publications = Copies.list(publications);
            controllerPublishedTo = Copies.list(controllerPublishedTo);
        }
    }

    /**
     * One allocation's publication of a volume on the node.
     *
     * @param commandId the mount command that made it (absent for a record written before commands were recorded)
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Publication(String allocationId, AccessMode accessMode, AttachmentMode attachmentMode,
                              Boolean readOnly, ReportedMount state, String commandId) {
    }

    @Override
    public EventType eventType() {
        return EventType.NODE_STATE;
    }

    @Override
    public String recordKey() {
        return nodeId;
    }

    @Override
    public void checkFields(Violations v) {
        v.id("nodeId", nodeId);
        if (sequence == null) {
            v.add("sequence", null, "is required");
        } else if (sequence < 1) {
            v.add("sequence", sequence, "must be at least 1");
        }
        v.required("takenAt", takenAt);
        if (leaseEpoch != null && leaseEpoch < 1) {
            v.add("leaseEpoch", leaseEpoch, "must be at least 1");
        }
        if (volumes.size() > MAX_VOLUMES) {
            v.add("volumes", volumes.size() + " entries", "must have at most " + MAX_VOLUMES + " entries");
            return;
        }
        for (int i = 0; i < volumes.size(); i++) {
            VolumeState vol = volumes.get(i);
            String at = "volumes[" + i + "]";
            if (vol == null) {
                v.add(at, null, "must not be null");
                continue;
            }
            v.id(at + ".namespace", vol.namespace());
            v.id(at + ".volumeId", vol.volumeId());
            v.id(at + ".pluginId", vol.pluginId());
            v.optionalText(at + ".externalVolumeId", vol.externalVolumeId(), 1024);
            v.required(at + ".staging", vol.staging());
            for (int j = 0; j < vol.publications().size(); j++) {
                Publication p = vol.publications().get(j);
                String pat = at + ".publications[" + j + "]";
                if (p == null) {
                    v.add(pat, null, "must not be null");
                    continue;
                }
                v.id(pat + ".allocationId", p.allocationId());
                v.required(pat + ".readOnly", p.readOnly());
                v.required(pat + ".state", p.state());
                v.optionalText(pat + ".commandId", p.commandId(), 200);
            }
            for (int j = 0; j < vol.controllerPublishedTo().size(); j++) {
                v.text(at + ".controllerPublishedTo[" + j + "]", vol.controllerPublishedTo().get(j), 1024);
            }
        }
    }
}
