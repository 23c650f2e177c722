package io.csiorchestrator.worker.state;

import io.csiorchestrator.events.PathSafeId;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;

/**
 * The layout of the worker's root directory ({@code csi.worker.root}) on one node:
 *
 * <pre>
 * root/
 *   staging/&lt;namespace&gt;/&lt;volume&gt;                 ONE staging path per volume on this node
 *   per-alloc/&lt;alloc&gt;/&lt;namespace&gt;/&lt;volume&gt;       the publish target of one allocation
 *   records/&lt;namespace&gt;/&lt;volume&gt;.json           the crash-safe record of the volume
 *   events/&lt;sequence&gt;.json                       a node event not yet acknowledged by Kafka (the event spool)
 * </pre>
 *
 * The namespace is part of every path because two namespaces may hold volumes with the same id.
 * Every id is checked with {@link PathSafeId} and every resolved path is checked to stay under
 * the root, so a hostile id can never name a path outside it. Directories are created with mode
 * 0700 by {@link PosixDirs}.
 *
 * <p>The worker never makes a symbolic link under its root, so a link there was planted: a mount,
 * mkdir or chmod through it would act outside the root as root (the Kubernetes subpath escape,
 * CVE-2017-1002101). {@link #requireNoLinks} refuses such a path before any plugin call, component
 * by component with {@code lstat} (no link is followed), and then checks that the real path of the
 * part that exists still lies under the real path of the root. The root itself is configuration: it
 * may lie below links (e.g. {@code /var/run}), nothing below it may be one.
 */
public final class WorkerPaths {

    public static final String STAGING = "staging";
    public static final String PER_ALLOC = "per-alloc";
    public static final String RECORDS = "records";
    public static final String EVENTS = "events";

    private final Path root;
    private final PosixDirs dirs;

    public WorkerPaths(Path root, PosixDirs dirs) {
        Objects.requireNonNull(root, "root");
        if (!root.isAbsolute()) {
            throw new IllegalArgumentException("csi.worker.root must be an absolute path, was '" + root + "'");
        }
        this.root = root.normalize();
        this.dirs = dirs;
    }

    public Path root() {
        return root;
    }

    /** The volume's one staging path on this node. */
    public Path stagingPath(String namespace, String volumeId) {
        return under(STAGING, id("namespace", namespace), id("volume id", volumeId));
    }

    /** Where the volume is published for one allocation; the plugin creates this path itself. */
    public Path targetPath(String allocationId, String namespace, String volumeId) {
        return under(PER_ALLOC, id("allocation id", allocationId), id("namespace", namespace), id("volume id", volumeId));
    }

    /** The allocation's own directory, removed when its last volume is released. */
    public Path allocationDir(String allocationId) {
        return under(PER_ALLOC, id("allocation id", allocationId));
    }

    public Path recordsDir() {
        return under(RECORDS);
    }

    /** The event spool: node events written before they are sent, deleted once Kafka acknowledged them. */
    public Path eventsDir() {
        return under(EVENTS);
    }

    public Path recordFile(String namespace, String volumeId) {
        return under(RECORDS, id("namespace", namespace), id("volume id", volumeId) + ".json");
    }

    /**
     * Creates {@code dir} and its missing parents up to the root with mode 0700 (owner only),
     * and makes sure an existing {@code dir} has mode 0700 and is a real directory, not a link.
     */
    public void ensureDirectory(Path dir) throws IOException {
        Path target = requireUnderRoot(dir);
        if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(root);
            dirs.chmod(root, PosixDirs.OWNER_ONLY);
        }
        Path current = root;
        for (Path part : root.relativize(target)) {
            current = current.resolve(part);
            dirs.mkdirOwnerOnly(current);
        }
    }

    /** Creates the parent of the target path (the CO's part; the plugin creates the target). */
    public void ensureTargetParent(Path targetPath) throws IOException {
        ensureDirectory(requireUnderRoot(targetPath).getParent());
    }

    /**
     * Refuses {@code path} when a component of it below the root is a symbolic link, or a component
     * other than the last is not a directory (so its existing part cannot resolve outside the root). A
     * missing tail is fine (the plugin or {@link #ensureDirectory} creates it); an existing last
     * component may be a directory or a regular file (a block volume's target). Checked again right
     * before each plugin call that takes the path; the root is 0700 and owned by root, so only root
     * can race the check.
     *
     * @throws UnsafePathException naming {@code path} and the offending component
     */
    public Path requireNoLinks(Path path) throws IOException {
        Path target = requireUnderRoot(path);
        if (!Files.isDirectory(root)) {
            return target;
        }
        Path current = root;
        Path checked = root;
        Path relative = root.relativize(target);
        int count = relative.getNameCount();
        for (int i = 0; i < count; i++) {
            current = current.resolve(relative.getName(i));
            BasicFileAttributes attrs;
            try {
                attrs = Files.readAttributes(current, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                break;
            } catch (FileSystemException e) {
                // lstat of a link never fails this way: this is a mount point whose file system is gone
                // (ENOTCONN of a dead FUSE daemon), which the heal unmounts; nothing below it can be seen
                break;
            }
            if (attrs.isSymbolicLink()) {
                throw new UnsafePathException(target, "refusing path " + target + ": " + current
                        + " is a symbolic link (to " + linkTarget(current) + "); the worker makes no links under its root "
                        + root + ", so this one was planted and is never followed");
            }
            boolean last = i == count - 1;
            if (!attrs.isDirectory() && !(last && attrs.isRegularFile())) {
                throw new UnsafePathException(target, "refusing path " + target + ": " + current
                        + " is not a directory");
            }
            checked = current;
        }
        // No component from the root down to `checked` is a link (each was lstat'ed above), so the existing part
        // resolves under the root by construction; no realpath(3) of it (one readlink a component, about a hundred
        // system calls per mount before).
        return target;
    }

    private static String linkTarget(Path link) {
        try {
            return Files.readSymbolicLink(link).toString();
        } catch (IOException e) {
            return "an unreadable target";
        }
    }

    /** {@code path} normalized, when it lies strictly under the root; otherwise an exception. */
    public Path requireUnderRoot(Path path) {
        Path normalized = (path.isAbsolute() ? path : root.resolve(path)).normalize();
        if (!normalized.startsWith(root) || normalized.equals(root)) {
            throw new IllegalArgumentException("path '" + path + "' is outside the worker's root " + root);
        }
        return normalized;
    }

    public boolean isUnderRoot(Path path) {
        Path normalized = path.normalize();
        return normalized.startsWith(root) && !normalized.equals(root);
    }

    private Path under(String... parts) {
        Path p = root;
        for (String part : parts) {
            p = p.resolve(part);
        }
        return requireUnderRoot(p);
    }

    private static String id(String field, String value) {
        return PathSafeId.require(field, value);
    }
}
