package io.csiorchestrator.worker.state;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.ReportedMount;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The node's actual state from its records and a mount table (given as mountinfo text): a table of cases. */
class ActualStateTest {

    static final Instant T = Instant.parse("2026-11-24T12:00:00Z");
    static final String STAGING = "/root/staging/ns/v1";
    static final String TARGET = "/root/per-alloc/a1/ns/v1";

    static MountTable table(String... mountPoints) {
        StringBuilder text = new StringBuilder();
        int id = 40;
        for (String point : mountPoints) {
            text.append(id++).append(" 1 8:1 /vol ").append(point).append(" rw,relatime - ext4 /dev/sda1 rw\n");
        }
        return MountTable.parse(text.toString());
    }

    static VolumeRecord record(StageState stage, PublishState publish) {
        VolumeRecord r = VolumeRecord.empty(new VolumeKey("ns", "v1"), "hp", "ext-v1", STAGING).withStage(stage);
        return publish == null ? r : r.withUsage(new Usage("a1", TARGET, true, AccessMode.MULTI_NODE_READER_ONLY,
                AttachmentMode.FILE_SYSTEM, null, null, null, null, publish, "cmd-1"));
    }

    static NodeStateReported.VolumeState only(NodeStateReported report) {
        assertEquals(1, report.volumes().size(), report.toString());
        return report.volumes().get(0);
    }

    @Test
    void recordStatesCheckedAgainstTheMountTable() {
        record Case(StageState stage, PublishState publish, MountTable table, ReportedMount staging, ReportedMount publication) {
        }
        List<Case> cases = List.of(
                new Case(StageState.STAGED, PublishState.PUBLISHED, table(STAGING, TARGET), ReportedMount.MOUNTED, ReportedMount.MOUNTED),
                new Case(StageState.STAGED, PublishState.PUBLISHED, table(STAGING), ReportedMount.MOUNTED, ReportedMount.MISSING),
                new Case(StageState.STAGED, PublishState.PUBLISHED, table(TARGET), ReportedMount.MISSING, ReportedMount.MOUNTED),
                new Case(StageState.STAGING, PublishState.PUBLISHING, table(), ReportedMount.MOUNTING, ReportedMount.MOUNTING),
                new Case(StageState.STAGED, PublishState.UNPUBLISHING, table(STAGING, TARGET), ReportedMount.MOUNTED, ReportedMount.UNMOUNTING),
                new Case(StageState.UNSTAGED, PublishState.PUBLISHED, table(TARGET), ReportedMount.NONE, ReportedMount.MOUNTED));
        for (Case c : cases) {
            NodeStateReported.VolumeState v = only(ActualState.report("node-1", 1, T, List.of(record(c.stage(), c.publish())), c.table()));
            assertEquals(c.staging(), v.staging(), c.toString());
            NodeStateReported.Publication p = v.publications().get(0);
            assertEquals(c.publication(), p.state(), c.toString());
            assertEquals("a1", p.allocationId());
            assertEquals("cmd-1", p.commandId());
            assertEquals(Boolean.TRUE, p.readOnly());
            assertEquals(AccessMode.MULTI_NODE_READER_ONLY, p.accessMode());
        }
    }

    @Test
    void idleRecordsAreLeftOutAndControllerPublicationsReported() {
        VolumeRecord idle = VolumeRecord.empty(new VolumeKey("ns", "idle"), "hp", "ext", "/s")
                .withResult(new MountDone("c", "node-1", NodeCommandKind.UNMOUNT, "ns", "idle", "a", true, null, null,
                        Map.of(), null, null, T));
        VolumeRecord controller = VolumeRecord.empty(new VolumeKey("ns", "ctl"), "hp", "ext", "/s")
                .withControllerPublication("ext-node-2", Map.of());
        NodeStateReported report = ActualState.report("node-1", 7, T, List.of(idle, controller), table());
        assertEquals(7L, report.sequence());
        assertEquals(T, report.takenAt());
        NodeStateReported.VolumeState v = only(report);
        assertEquals("ctl", v.volumeId());
        assertEquals(List.of("ext-node-2"), v.controllerPublishedTo());
        assertEquals(ReportedMount.NONE, v.staging());
        assertEquals(List.of(), v.publications());
    }
}
