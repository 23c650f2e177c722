package io.csiorchestrator.claims.store;

import java.time.Instant;

/**
 * The listing of one plugin's volumes (issue 14): a sweep through CSI ListVolumes' pages that claim-service compares
 * with the volumes it created ({@code provision.VolumeListings}); one at a time per plugin. A row of
 * {@code volume_listings}, read and written by {@link VolumeListingRows}.
 */
public class VolumeListingEntity {

    public String pluginId;
    /** When the sweep in progress (or the last one) started: a volume it lists is marked listed as of then. */
    public Instant startedAt;
    /** Pages answered so far in this sweep. */
    public int pages;
    public String commandId;
    public String commandNodeId;
    public Instant commandDeadline;
    /** When the last complete sweep ended. */
    public Instant completedAt;
    /** Why the last sweep was given up (the worker's code and message), or null. */
    public String lastError;
}
