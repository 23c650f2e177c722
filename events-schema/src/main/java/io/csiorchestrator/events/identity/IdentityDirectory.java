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

    /**
     * The sealing key file of {@code principal} ({@code <kind>-<id>.seal.key}, 0600): the X25519 keys secrets are sealed
     * to (a node's, claim-service's; issue 20 item 4).
     */
    public Path sealKeyFile(Principal principal) {
        return dir.resolve(principal.kind().name().toLowerCase(java.util.Locale.ROOT) + "-" + principal.id() + ".seal.key");
    }

    /**
     * {@code principal}'s sealing keys: the ones in its file (each made sure to be in the trust file), else a new one
     * (written 0600 first, then published in the trust file).
     */
    public synchronized SealingKeys ensureSealing(Principal principal) {
        Path file = sealKeyFile(principal);
        if (Files.exists(file)) {
            SealingKeys keys = SealingKeys.read(file);
            TrustSet trust = trust();
            boolean changed = false;
            for (SealingKeys.Key k : keys.keys()) {
                if (trust.find(k.kid()).isEmpty()) {
                    trust = trust.with(keys.publicEntry(k));
                    changed = true;
                }
            }
            if (changed) {
                trust.write(trustFile());
            }
            return keys;
        }
        SealingKeys keys = SealingKeys.generate(principal, newKid(principal, "enc"));
        keys.write(file);
        trust().with(keys.publicEntry(keys.newest())).write(trustFile());
        return keys;
    }

    /**
     * A new sealing key for {@code principal}: added to its key file first (so it opens what is sealed to it from the
     * moment it is published), then published in the trust file, where sealers take the newest. Its older keys keep
     * opening until {@link #retire}.
     */
    public synchronized SealingKeys rotateSealing(Principal principal) {
        Path file = sealKeyFile(principal);
        if (!Files.exists(file)) {
            return ensureSealing(principal);
        }
        SealingKeys keys = SealingKeys.read(file).withNewKey(newKid(principal, "enc"));
        keys.write(file);
        trust().with(keys.publicEntry(keys.newest())).write(trustFile());
        return keys;
    }

    /** The trust set now (empty when there is no trust file yet). */
    public TrustSet trust() {
        return Files.exists(trustFile()) ? TrustSet.read(trustFile()) : TrustSet.of(List.of());
    }

    /**
     * {@code principal}'s key: the one in its file, else a new one (written 0600 and added to the trust file). A node
     * gets its sealing keys too ({@link #ensureSealing}).
     */
    public synchronized IdentityKey ensure(Principal principal) {
        if (principal.kind() == Principal.Kind.NODE) {
            ensureSealing(principal); // a node also opens the secrets sealed for it (issue 20 item 4)
        }
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

    /**
     * A new key for {@code principal} under a new kid (for a node, a new sealing key too, {@link #rotateSealing}); its
     * earlier keys stay trusted until {@link #retire}.
     */
    public synchronized IdentityKey rotate(Principal principal) {
        if (principal.kind() == Principal.Kind.NODE) {
            rotateSealing(principal);
        }
        return make(principal);
    }

    /**
     * Drops every trusted key of {@code principal} but the one in its key file and the newest of its sealing keys; the
     * sealing key file keeps only that newest key. Returns the kids dropped.
     */
    public synchronized List<String> retire(Principal principal) {
        String current = Files.exists(keyFile(principal)) ? IdentityKey.read(keyFile(principal)).kid() : null;
        Path sealFile = sealKeyFile(principal);
        SealingKeys sealing = Files.exists(sealFile) ? SealingKeys.read(sealFile) : null;
        String currentSealing = sealing == null ? null : sealing.newest().kid();
        TrustSet trust = trust();
        List<String> dropped = new ArrayList<>();
        for (TrustSet.Entry e : trust.entries()) {
            String keep = e.use() == TrustSet.Use.ENC ? currentSealing : current;
            if (e.principal().equals(principal) && !e.kid().equals(keep)) {
                dropped.add(e.kid());
            }
        }
        for (String kid : dropped) {
            trust = trust.without(kid);
        }
        // trust first: nothing is sealed to a retired key any more, then its private half goes
        trust.write(trustFile());
        if (sealing != null && sealing.keys().size() > 1) {
            for (String kid : sealing.kids()) {
                if (!kid.equals(currentSealing) && !dropped.contains(kid)) {
                    dropped.add(kid);
                }
            }
            sealing.newestOnly().write(sealFile);
        }
        return dropped;
    }

    private static String newKid(Principal principal, String use) {
        return principal.kind().name().toLowerCase(java.util.Locale.ROOT) + "." + principal.id() + "."
                + (use == null ? "" : use + ".") + KID_TIME.format(ZonedDateTime.now(ZoneOffset.UTC)) + "-"
                + java.util.HexFormat.of().toHexDigits((short) new java.security.SecureRandom().nextInt());
    }

    private IdentityKey make(Principal principal) {
        String kid = newKid(principal, null);
        IdentityKey key = IdentityKey.generate(principal, kid);
        // trust first: a key in use is always trusted (a crash between the two leaves an unused trusted key)
        trust().with(key.publicEntry()).write(trustFile());
        key.write(keyFile(principal));
        return key;
    }
}
