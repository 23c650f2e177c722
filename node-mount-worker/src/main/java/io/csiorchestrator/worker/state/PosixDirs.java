package io.csiorchestrator.worker.state;

import java.io.IOException;
import java.nio.file.Path;
import jnr.posix.FileStat;
import jnr.posix.POSIX;
import jnr.posix.POSIXFactory;
import jnr.posix.util.DefaultPOSIXHandler;
import jnr.constants.platform.Errno;

/**
 * The few syscalls the worker needs on directories (mkdir with a mode, chmod, lstat), through
 * jnr-posix so that modes are exact (no umask surprise) and errors carry errno.
 */
public final class PosixDirs {

    public static final int OWNER_ONLY = 0700;
    private static final int S_IFMT = 0170000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFLNK = 0120000;
    private static final int EEXIST = 17;

    private final POSIX posix;

    public PosixDirs() {
        this(POSIXFactory.getNativePOSIX(new ErrnoHandler()));
    }

    /** Reports errors through errno and return codes instead of exceptions, so callers decide. */
    static final class ErrnoHandler extends DefaultPOSIXHandler {
        @Override
        public void error(Errno error, String extraData) {
        }

        @Override
        public void error(Errno error, String methodName, String extraData) {
        }
    }

    PosixDirs(POSIX posix) {
        this.posix = posix;
    }

    /** Creates {@code dir} with mode 0700, or checks that it exists as a directory and sets 0700. */
    public void mkdirOwnerOnly(Path dir) throws IOException {
        String path = dir.toString();
        int rc = posix.mkdir(path, OWNER_ONLY);
        if (rc != 0 && posix.errno() != EEXIST) {
            throw new IOException("cannot create directory " + path + ": errno " + posix.errno());
        }
        FileStat st = posix.allocateStat();
        if (posix.lstat(path, st) != 0) {
            throw new IOException("cannot stat " + path + ": errno " + posix.errno());
        }
        if ((st.mode() & S_IFMT) == S_IFLNK) {
            throw new UnsafePathException(dir, "refusing path " + path + ": it is a symbolic link (to "
                    + posix.readlink(path) + "), never followed");
        }
        if ((st.mode() & S_IFMT) != S_IFDIR) {
            throw new IOException(path + " exists and is not a directory (or is a symbolic link)");
        }
        if ((st.mode() & 07777) != OWNER_ONLY) {
            chmod(dir, OWNER_ONLY);
        }
    }

    public void chmod(Path path, int mode) throws IOException {
        if (posix.chmod(path.toString(), mode) != 0) {
            throw new IOException("cannot chmod " + path + " to " + Integer.toOctalString(mode) + ": errno " + posix.errno());
        }
    }

    /** The permission bits of {@code path} (no link following). */
    public int mode(Path path) {
        return posix.lstat(path.toString()).mode() & 07777;
    }

    public int ownerUid(Path path) {
        return posix.lstat(path.toString()).uid();
    }
}
