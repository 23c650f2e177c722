package io.csiorchestrator.events.identity;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

/**
 * A directory of identities as {@code ./csi} keeps them: the trust file {@code trust.json} (public keys, for the
 * services) and one private key file per principal, {@code <kind>-<id>.key} (mode 0600; e.g. {@code node-node-1.key},
 * {@code scheduler-csi-cli.key}, for that node's worker or that scheduler only). Making a key adds it to the trust
 * file; rotating makes a new key under a new kid and keeps the old one trusted until it is retired, so records signed
 * before the rotation (or by a replica not restarted yet) are believed meanwhile. Not thread-safe across processes:
 * one operator command at a time.
 */
public final class IdentityDirectory {

    public static final String TRUST_FILE = "trust.json";
    private static final DateTimeFormatter KID_TIME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmssSSS");

    private final Path dir;

    public IdentityDirectory(Path dir) {
        this.dir = dir;
    }

    public Path trustFile() {
        return dir.resolve(TRUST_FILE);
    }

    /** The private key file of {@code principal}. */
    public Path keyFile(Principal principal) {
        return dir.resolve(principal.kind().name().toLowerCase(java.util.Locale.ROOT) + "-" + principal.id() + ".key");
    }

    /** The trust set now (empty when there is no trust file yet). */
    public TrustSet trust() {
        return Files.exists(trustFile()) ? TrustSet.read(trustFile()) : TrustSet.of(List.of());
    }

    /** {@code principal}'s key: the one in its file, else a new one (written 0600 and added to the trust file). */
    public synchronized IdentityKey ensure(Principal principal) {
        Path file = keyFile(principal);
        if (Files.exists(file)) {
            IdentityKey key = IdentityKey.read(file);
            if (trust().find(key.kid()).isEmpty()) {
                trust().with(key.publicEntry()).write(trustFile());
            }
            return key;
        }
        return make(principal);
    }

    /** A new key for {@code principal} under a new kid; its earlier keys stay trusted until {@link #retire}. */
    public synchronized IdentityKey rotate(Principal principal) {
        return make(principal);
    }

    /** Drops every trusted key of {@code principal} but the one in its key file; returns the kids dropped. */
    public synchronized List<String> retire(Principal principal) {
        String current = Files.exists(keyFile(principal)) ? IdentityKey.read(keyFile(principal)).kid() : null;
        TrustSet trust = trust();
        List<String> dropped = new ArrayList<>();
        for (TrustSet.Entry e : trust.entries()) {
            if (e.principal().equals(principal) && !e.kid().equals(current)) {
                dropped.add(e.kid());
            }
        }
        for (String kid : dropped) {
            trust = trust.without(kid);
        }
        trust.write(trustFile());
        return dropped;
    }

    private IdentityKey make(Principal principal) {
        String kid = principal.kind().name().toLowerCase(java.util.Locale.ROOT) + "." + principal.id() + "."
                + KID_TIME.format(ZonedDateTime.now(ZoneOffset.UTC)) + "-"
                + java.util.HexFormat.of().toHexDigits((short) new java.security.SecureRandom().nextInt());
        IdentityKey key = IdentityKey.generate(principal, kid);
        // trust first: a key in use is always trusted (a crash between the two leaves an unused trusted key)
        trust().with(key.publicEntry()).write(trustFile());
        key.write(keyFile(principal));
        return key;
    }
}
