package io.csiorchestrator.worker.mount;

/**
 * What is wrong with a staging or publish target the record says is mounted, as found by
 * {@link MountCheck}.
 */
public enum MountDamage {
    /** Mounted and answering. */
    NONE("none"),
    /** No longer a mount point (unmounted behind the worker's back, e.g. {@code umount -l}). */
    NOT_MOUNTED("not-mounted"),
    /**
     * Still in the mount table, but {@code stat} fails the way a dead FUSE daemon or a lost NFS
     * server makes it fail (ENOTCONN, ESTALE, EIO, EHOSTDOWN): it must be unmounted before it can
     * be mounted again.
     */
    CORRUPTED("corrupted");

    private final String label;

    MountDamage(String label) {
        this.label = label;
    }

    /** The metric tag and event text: {@code none}, {@code not-mounted}, {@code corrupted}. */
    public String label() {
        return label;
    }
}
