package io.csiorchestrator.worker.mount;

/** How a fence left one path. */
public enum FenceOutcome {
    /** Unmounted through the plugin, or nothing was mounted there. */
    UNMOUNTED,
    /** Detached with umount2(MNT_DETACH): the plugin was not there or could not unmount it (busy). */
    LAZY,
    /** Still mounted. */
    FAILED
}
