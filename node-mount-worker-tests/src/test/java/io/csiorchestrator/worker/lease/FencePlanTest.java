package io.csiorchestrator.worker.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What a fence unmounts (issue 19 item 2), from the records: the targets of fenceOnLapse publications in any state,
 * the staging only when no publication that is not fenced keeps it and it is staged; volumes without fenceOnLapse
 * publications are left out.
 */
class FencePlanTest {

    private static Usage usage(String alloc, String volume, boolean fence, PublishState state) {
        return new Usage(alloc, "/w/per-alloc/" + alloc + "/ns/" + volume, false, AccessMode.SINGLE_NODE_WRITER,
                AttachmentMode.FILE_SYSTEM, null, null, null, null, state, "cmd-" + alloc, fence);
    }

    private static VolumeRecord volume(String id, StageState stage, Usage... usages) {
        VolumeRecord r = VolumeRecord.empty(new VolumeKey("ns", id), "hp", "ext-" + id, "/w/staging/ns/" + id)
                .withStage(stage);
        for (Usage u : usages) {
            r = r.withUsage(u);
        }
        return r;
    }

    /** A volume whose only publications are fenced: every target, then its staging. */
    @Test
    void aVolumeUsedOnlyByFencedPublicationsLosesItsTargetsAndItsStaging() {
        FencePlan plan = FencePlan.of(List.of(volume("v1", StageState.STAGED,
                usage("a2", "v1", true, PublishState.PUBLISHING), usage("a1", "v1", true, PublishState.PUBLISHED))));
        assertEquals(1, plan.volumes().size());
        FencePlan.Volume v = plan.volumes().get(0);
        assertEquals(new VolumeKey("ns", "v1"), v.key());
        assertEquals("hp", v.pluginId());
        assertEquals("ext-v1", v.externalVolumeId());
        assertEquals(List.of(new FencePlan.Target("a1", "/w/per-alloc/a1/ns/v1"),
                new FencePlan.Target("a2", "/w/per-alloc/a2/ns/v1")), v.targets());
        assertEquals("/w/staging/ns/v1", v.stagingPath());
        assertEquals(List.of("/w/per-alloc/a1/ns/v1", "/w/per-alloc/a2/ns/v1", "/w/staging/ns/v1"), plan.paths());
    }

    /** A reader (not fenced) on the same volume keeps the staging; only the fenced target goes. */
    @Test
    void aPublicationNotFencedKeepsTheStagingAndIsNotInThePlan() {
        FencePlan plan = FencePlan.of(List.of(volume("v1", StageState.STAGED,
                usage("w1", "v1", true, PublishState.PUBLISHED), usage("r1", "v1", false, PublishState.PUBLISHED))));
        FencePlan.Volume v = plan.volumes().get(0);
        assertEquals(List.of(new FencePlan.Target("w1", "/w/per-alloc/w1/ns/v1")), v.targets());
        assertNull(v.stagingPath());
        assertEquals(List.of("/w/per-alloc/w1/ns/v1"), plan.paths());
    }

    /** Volumes without a fenced publication (also old records, which read as not fenced) are kept whole. */
    @Test
    void volumesWithoutFencedPublicationsAreLeftOut() {
        FencePlan plan = FencePlan.of(List.of(
                volume("keep", StageState.STAGED, usage("k1", "keep", false, PublishState.PUBLISHED)),
                volume("idle", StageState.STAGED)));
        assertTrue(plan.isEmpty());
        assertEquals(List.of(), plan.paths());
    }

    /** A plugin without staging (record UNSTAGED): targets only; an UNPUBLISHING publication is still unmounted. */
    @Test
    void anUnstagedVolumeHasNoStagingToUnmountAndAReleaseInProgressIsStillFenced() {
        FencePlan plan = FencePlan.of(List.of(
                volume("v2", StageState.UNSTAGED, usage("a1", "v2", true, PublishState.UNPUBLISHING)),
                volume("v1", StageState.UNSTAGING, usage("b1", "v1", true, PublishState.PUBLISHED))));
        assertEquals(List.of("v1", "v2"), plan.volumes().stream().map(v -> v.key().volumeId()).toList());
        assertEquals(List.of("/w/per-alloc/b1/ns/v1", "/w/per-alloc/a1/ns/v2", "/w/staging/ns/v1"), plan.paths());
    }
}
