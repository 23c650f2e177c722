package io.csiorchestrator.events.identity;

import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

/**
 * A principal's sealing key file ({@link SealingKeys}), read at start and again when a sealed value names a key id it
 * does not hold and the file has changed since (a rotation: the operator adds the new key to the file before
 * publishing it in the trust file), so a rotation needs no restart. Opens only what was sealed for
 * {@code expected} (the worker's node, claim-service): a file of another principal is refused at start.
 */
public final class SealingKeyFile implements SecretSealer.Opener {

    private final Path file;
    private volatile SealingKeys keys;
    private volatile FileTime modified;

    public SealingKeyFile(Path file, Principal expected) {
        this.file = file;
        this.keys = SealingKeys.read(file);
        this.modified = modifiedTime();
        if (!keys.principal().equals(expected)) {
            throw new IllegalArgumentException("sealing key file " + file + " holds the keys of " + keys.principal()
                    + ", not of " + expected);
        }
    }

    public Path file() {
        return file;
    }

    /** The keys now (read again if the file changed). */
    public SealingKeys keys() {
        refresh();
        return keys;
    }

    @Override
    public SecretPayload open(SealedSecrets sealed, String namespace, String volumeId) {
        if (sealed != null && keys.find(sealed.keyId()).isEmpty()) {
            refresh();
        }
        return SecretSealer.open(sealed, keys, namespace, volumeId);
    }

    private synchronized void refresh() {
        FileTime now = modifiedTime();
        if (now != null && !now.equals(modified)) {
            SealingKeys read = SealingKeys.read(file);
            if (read.principal().equals(keys.principal())) {
                keys = read;
                modified = now;
            }
        }
    }

    private FileTime modifiedTime() {
        try {
            return Files.getLastModifiedTime(file);
        } catch (IOException e) {
            return null;
        }
    }

    @Override
    public String toString() {
        return "SealingKeyFile[" + file + ", " + keys + "]";
    }
}
