package io.csiorchestrator.csi.mount;

import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Supplier;

/** What a mount step asks of the mount table: is something mounted at this path, and is that mount read-only. */
public interface MountView {

    boolean isMountPoint(Path path);

    /** Empty when nothing is mounted at {@code path}; else whether the mount there is read-only. */
    Optional<Boolean> readOnlyAt(Path path);

    /**
     * A view that asks the kernel about each path ({@link MountProbe}: a system call or two a question) and reads
     * {@code table} (once per view) only for a path the probe cannot tell about; the table itself where there is no probe.
     */
    static Supplier<MountView> probing(Supplier<MountTable> table) {
        Optional<MountProbe> probe = MountProbe.system();
        if (probe.isEmpty()) {
            return table::get;
        }
        return () -> new Probed(probe.get(), table);
    }

    /** {@link #probing}'s view: the probe first, the table (read at most once) where the probe cannot tell. */
    final class Probed implements MountView {
        private final MountProbe probe;
        private final Supplier<MountTable> tableSupplier;
        private MountTable table;

        Probed(MountProbe probe, Supplier<MountTable> table) {
            this.probe = probe;
            this.tableSupplier = table;
        }

        private MountTable table() {
            if (table == null) {
                table = tableSupplier.get();
            }
            return table;
        }

        @Override
        public boolean isMountPoint(Path path) {
            Boolean root = probe.isMountRoot(path);
            return root != null ? root : table().isMountPoint(path);
        }

        @Override
        public Optional<Boolean> readOnlyAt(Path path) {
            Boolean root = probe.isMountRoot(path);
            if (root == null) {
                return table().readOnlyAt(path);
            }
            if (!root) {
                return Optional.empty();
            }
            long flags = probe.mountFlags(path);
            return flags < 0 ? table().readOnlyAt(path) : Optional.of((flags & MountProbe.ST_RDONLY) != 0);
        }
    }
}
