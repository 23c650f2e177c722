package io.csiorchestrator.worker.mount;

import java.nio.file.Path;
import java.util.Optional;

/**
 * The fence's last resort (issue 19): a lazy unmount, {@code umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW)}, of a target or staging path
 * whose plugin is not there or could not unmount it (busy). The mount disappears from the namespace at once; open
 * files keep working until closed, but nothing new can be opened through the path.
 */
@FunctionalInterface
public interface LazyUnmount {

    /** {@code MNT_DETACH} of linux/fs.h. */
    int MNT_DETACH = 2;
    /** {@code UMOUNT_NOFOLLOW}: a symbolic link as the last component is not followed. */
    int UMOUNT_NOFOLLOW = 8;

    /** Detaches the mount at {@code path}; empty on success, else the reason (the errno's name). */
    Optional<String> detach(Path path);

    /** The real thing: {@code umount2(2)} through jnr-ffi (no process is started). */
    static LazyUnmount system() {
        LibC libc = jnr.ffi.LibraryLoader.create(LibC.class).load("c");
        jnr.ffi.Runtime runtime = jnr.ffi.Runtime.getRuntime(libc);
        return path -> {
            synchronized (LibC.class) {
                if (libc.umount2(path.toString(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
                    return Optional.empty();
                }
                int errno = runtime.getLastError();
                jnr.constants.platform.Errno e = jnr.constants.platform.Errno.valueOf(errno);
                return Optional.of("umount2(MNT_DETACH) of " + path + " failed: "
                        + (e == null ? "errno " + errno : e.name() + " (" + e.description() + ")"));
            }
        };
    }

    /** The one libc function used. */
    interface LibC {
        @jnr.ffi.annotations.SaveError
        int umount2(String target, int flags);
    }
}
