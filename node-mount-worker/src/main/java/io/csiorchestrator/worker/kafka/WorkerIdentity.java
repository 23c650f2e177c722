package io.csiorchestrator.worker.kafka;

import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.Principal;
import java.nio.file.Path;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * The node's record-signing key (issue 20 item 3): the file {@code csi.worker.identity-key-file} (env
 * {@code CSI_IDENTITY_KEY_FILE}), made when the node joined ({@code ./csi node join <id>}; {@code ./csi up} makes its
 * nodes'). Its principal must be {@code node:<this node's id>}: a worker refuses to start with another node's key.
 * Without the setting the worker's records go unsigned, which consumers that enforce signatures (the default)
 * dead-letter: said at start as a warning.
 */
public final class WorkerIdentity {

    public static final String KEY_FILE = "csi.worker.identity-key-file";
    private static final Logger LOG = Logger.getLogger(WorkerIdentity.class);

    private WorkerIdentity() {
    }

    /** The key of {@code nodeId} from {@code file} (the worker's {@code csi.worker.identity-key-file}), or null without one. */
    public static IdentityKey load(Optional<Path> file, String nodeId) {
        if (file.isEmpty()) {
            LOG.warnf("%s is not set: node %s's records are NOT signed, and services that verify signatures (the"
                    + " default) will dead-letter them", KEY_FILE, nodeId);
            return null;
        }
        return load(file.get(), nodeId);
    }

    /** The key in {@code file}, which must be {@code nodeId}'s. */
    public static IdentityKey load(Path file, String nodeId) {
        IdentityKey key = IdentityKey.read(file);
        if (!key.principal().equals(Principal.node(nodeId))) {
            throw new IllegalStateException("the identity key " + file + " is " + key.principal() + "'s, not node:" + nodeId);
        }
        LOG.infof("node %s signs its records with key %s", nodeId, key.kid());
        return key;
    }
}
