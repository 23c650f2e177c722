package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountTable;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import jnr.constants.platform.Errno;
import jnr.posix.FileStat;
import jnr.posix.POSIX;
import jnr.posix.POSIXFactory;
import jnr.posix.util.DefaultPOSIXHandler;

/**
 * Checks a path the record says is mounted: {@code stat(2)} it (through jnr-posix, so the
 * errno is the kernel's, not a translated message) and look it up in the mount table. The
 * decision is {@link #classify}, a pure function of the two.
 *
 * <p>As kubelet's {@code IsCorruptedMnt} (mount-utils) does, ENOTCONN ("transport endpoint is not
 * connected": a FUSE daemon that died), ESTALE (an NFS handle the server forgot), EIO and
 * EHOSTDOWN mean a corrupted mount point; any other errno on a mount point is left alone (not
 * ours to judge). A {@code stat} of a FUSE mount whose daemon is alive but hung blocks: the
 * check runs on the volume's own thread, so it holds up that volume only.
 */
public final class MountCheck {

    /** The errnos of {@code stat} that mean a corrupted mount point (kubelet's list, without EACCES: we run as root). */
    static final Set<Errno> CORRUPTED_ERRNOS = Set.of(Errno.ENOTCONN, Errno.ESTALE, Errno.EIO, Errno.EHOSTDOWN);

    /** {@code stat(2)} of a path: empty when it succeeded, else its errno. */
    @FunctionalInterface
    public interface Stat {
        Optional<Errno> stat(Path path);
    }

    /** What the check found, with the errno when {@code stat} failed. */
    public record Result(MountDamage damage, Optional<Errno> errno) {
        public String describe() {
            return damage.label() + errno.map(e -> " (" + e.name() + ")").orElse("");
        }
    }

    private final Stat stat;

    public MountCheck(Stat stat) {
        this.stat = stat;
    }

    /** The real {@code stat(2)}. */
    public static MountCheck system() {
        POSIX posix = POSIXFactory.getNativePOSIX(new DefaultPOSIXHandler() {
            @Override
            public void error(Errno error, String extraData) {
            }

            @Override
            public void error(Errno error, String methodName, String extraData) {
            }
        });
        return new MountCheck(path -> {
            FileStat st = posix.allocateStat();
            if (posix.stat(path.toString(), st) == 0) {
                return Optional.empty();
            }
            return Optional.ofNullable(Errno.valueOf(posix.errno()));
        });
    }

    public Result check(Path path, MountTable table) {
        Optional<Errno> errno = stat.stat(path);
        return new Result(classify(errno, table.isMountPoint(path)), errno);
    }

    /**
     * The decision: a corrupted-mount errno wins (the mount table still lists such a mount);
     * otherwise a path that is not in the mount table is not mounted; otherwise it is intact.
     */
    public static MountDamage classify(Optional<Errno> statErrno, boolean inMountTable) {
        if (statErrno.isPresent() && CORRUPTED_ERRNOS.contains(statErrno.get())) {
            return MountDamage.CORRUPTED;
        }
        return inMountTable ? MountDamage.NONE : MountDamage.NOT_MOUNTED;
    }
}
