package io.csiorchestrator.cli;

import io.csiorchestrator.events.identity.IdentityDirectory;
import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.TrustSet;
import java.io.PrintStream;
import java.util.List;
import java.util.Set;

/**
 * {@code ./csi identity}: the record-signing keys of nodes and schedulers (issue 20 items 3 and 5) in the work dir's
 * {@code security/identities}: {@code join-node <id>} / {@code scheduler <id>} make a principal's key (kept if there)
 * and add it to the trust file (a node also gets its X25519 sealing key, issue 20 item 4); {@code claim-service}
 * makes claim-service's sealing key; {@code rotate <principal>} makes a new key (a node: both), the old one stays
 * trusted and keeps opening; {@code retire <principal>} drops its old keys; {@code list} shows the trust file.
 * README "Security".
 */
final class IdentityCommand {

    static final Set<String> OPTIONS = Set.of("work-dir");

    private final Args args;
    private final IdentityDirectory dir;
    private final PrintStream out;

    IdentityCommand(Args args, java.nio.file.Path home, PrintStream out) {
        this.args = args;
        this.dir = new IdentityDirectory(Up.workDir(args, home).resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR));
        this.out = out;
    }

    int run() {
        String verb = args.positional(0, "identity command (join-node, scheduler, claim-service, rotate, retire, list)");
        return switch (verb) {
            case "join-node" -> made(dir.ensure(Principal.node(args.atMost(2).positional(1, "node id"))));
            case "scheduler" -> made(dir.ensure(Principal.scheduler(args.atMost(2).positional(1, "scheduler id"))));
            case "claim-service" -> {
                args.atMost(1);
                yield sealing(dir.ensureSealing(Cluster.CLAIM_SERVICE));
            }
            case "rotate" -> {
                Principal p = principal();
                yield p.kind() == Principal.Kind.SERVICE ? sealing(dir.rotateSealing(p)) : made(dir.rotate(p));
            }
            case "retire" -> {
                Principal p = principal();
                List<String> dropped = dir.retire(p);
                out.println(p + ": retired " + (dropped.isEmpty() ? "no keys" : String.join(", ", dropped))
                        + "; trust file " + dir.trustFile());
                yield 0;
            }
            case "list" -> {
                args.atMost(1);
                for (TrustSet.Entry e : dir.trust().entries()) {
                    out.println(e.principal() + "\t" + e.kid() + "\t" + e.use().wire());
                }
                yield 0;
            }
            default -> throw new Args.UsageException("unknown command 'identity " + verb + "'");
        };
    }

    private Principal principal() {
        String text = args.atMost(2).positional(1, "principal (node:<id>, scheduler:<id> or claim-service)");
        try {
            return Principal.parse(text);
        } catch (IllegalArgumentException e) {
            throw new Args.UsageException(e.getMessage());
        }
    }

    private int made(IdentityKey key) {
        out.println(key.principal() + ": key " + key.kid() + " in " + dir.keyFile(key.principal())
                + " (0600: give it to that worker as CSI_IDENTITY_KEY_FILE, or to that scheduler); trust file "
                + dir.trustFile() + " (give it to the services: CSI_TRUST_FILE)");
        if (key.principal().kind() == Principal.Kind.NODE) {
            sealing(io.csiorchestrator.events.identity.SealingKeys.read(dir.sealKeyFile(key.principal())));
        }
        return 0;
    }

    /** Where {@code keys} are and who takes them (issue 20 item 4). */
    private int sealing(io.csiorchestrator.events.identity.SealingKeys keys) {
        out.println(keys.principal() + ": sealing keys " + String.join(", ", keys.kids()) + " (newest last) in "
                + dir.sealKeyFile(keys.principal()) + " (0600: give it to "
                + (keys.principal().kind() == Principal.Kind.NODE ? "that worker as CSI_SEAL_KEY_FILE"
                : "claim-service as CSI_SEAL_KEY_FILE") + " before the trust file reaches the services and schedulers)");
        return 0;
    }
}
