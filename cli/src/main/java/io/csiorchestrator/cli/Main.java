package io.csiorchestrator.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.Set;

/** Entry point of {@code ./csi}. */
public final class Main {

    static final String USAGE = """
            usage: ./csi <command> [options]

            The system on one command:
              demo [--work-dir D]          start everything, play one volume's life across two nodes (created
                                           through claim-service, written, read, snapshotted, restored, deleted),
                                           tear down
              up [--work-dir D] [--fresh]  start everything and leave it running (work dir .csi/up); the state
                                           (Kafka's log, PostgreSQL's data, the hostpath volumes, the workers'
                                           records) is kept from the last `up` unless --fresh, which starts empty
                                           (both: --json-logs makes the services log JSON lines)
              up --simulated-nodes N [--plugin-delay D]
                                           the same with N simulated nodes sim-node-1..N (one node-simulator
                                           process: the worker's command handling, record store and Kafka clients
                                           over an in-memory plugin "simulated", D per plugin call, default 1ms)
                                           instead of the two real workers and hostpath plugins
              down [--work-dir D]          stop what `up` started, unmount anything left under its work dir;
                                           the state stays for the next `up`
              restart kafka|postgres [--work-dir D]
                                           stop (SIGTERM) and start one of them again on its kept state and port
              chaos [--short] [--faults a,b] [--rate R] [--volumes N] [--outage S] [--json F] [--work-dir D]
                                           the fault suite: its own system (.csi/chaos-<ts>) under a steady load of
                                           claims and releases, one fault after another (kill -9 and restart of each
                                           process, a claim-service failover, a registry failover: one of two
                                           replicas killed, the survivor keeps every node lease; Kafka restart,
                                           PostgreSQL crash and outage); checks the invariants, prints a table per fault, exit 1 on any
                                           violation. Faults: claims-kill, claims-failover, registry-kill,
                                           worker-kill-node-1/-2, plugin-kill-node-1/-2, kafka-restart, postgres-kill,
                                           postgres-outage (--outage S seconds, default 130); --short: 4 of them.
                                           Fencing (issue 19; node-1 in a network namespace of its own):
                                           partition-node-1, -in, -out, freeze-worker-node-1,
                                           partition-node-1-claims-restart, detach-live-node-2;
                                           --env K=V,.. (e.g. CSI_FENCING_LEASE_TTL=6s) for every process,
                                           --fence-slack S (default 30) added to the failover bound
              bench --rate R --duration D [--volumes V] [--hold H] [--json F] [--work-dir D]
                                           open-loop load on the `up` system: claim → ready and release → released
                                           percentiles (from each request's due time), outcomes, CPU ms per operation
                                           and RSS per process, the floor (Kafka hop, commit, plugin RPCs)
              bench --sweep [--slo 250ms] [--step-duration 20s] [--json F]
                                           steps the rate 10..1000/s until claim P99 > SLO or errors; JSON + SVG chart
              bench [--sequential] [--cycles N] [--warmup W] [--node N]
                                           (no --rate/--sweep) one claim at a time: latency hop by hop (record timestamps)

            Volumes, plugins and nodes (claim-service and plugin-registry-service REST, Kafka):
              volume create <id> --capacity SIZE [--capacity-max SIZE] [--plugin hostpath] [--access-mode M]
                           [--attachment-mode M] [--fs-type T] [--parameter k=v ...] [--topology k=v ...]
                           [--source-volume ID (a clone) | --source-snapshot ID (a restore)] [--timeout 2m]
                                                            through the services (issue 14): claim-service sends CSI
                                                            CreateVolume to a healthy controller's node worker, then
                                                            registers the volume; waits for created (prints externalId)
                                                            or failed. SIZE: bytes or 1GiB, 500MiB, 2G
              volume create <name> [--plugin hostpath]      (no --capacity) CSI CreateVolume straight on each node's
                                                            plugin of `up` (prints externalId; not registered)
              volume delete <id> [--timeout 2m]             a volume created through the services: refused while
                                                            claimed; CSI DeleteVolume, then deregistered (a failed
                                                            create: CreateVolume again by name first, to delete a
                                                            volume an uncertain attempt made)
              volume expand <id> --capacity SIZE [--timeout 2m]
                                                            a volume created through the services, while claimed too:
                                                            CSI ControllerExpandVolume, then NodeExpandVolume on each
                                                            node where a claim is ready (if the plugin asks; a claim
                                                            ready later on another node is expanded there too); waits
                                                            for expanded (prints the capacity) or failed (the plugin's
                                                            message; NodeExpand's FAILED_PRECONDITION is not retried).
                                                            A plugin that expands offline only: refused while claimed
                                                            (release the claims first)
              volume snapshot create <id> --volume V [--parameter k=v ...] [--timeout 2m]
                                                            CSI CreateSnapshot of volume V through the services;
                                                            waits until ready to use (prints externalId) or failed
              volume snapshot list                          the namespace's snapshots and their phase
              volume snapshot delete <id> [--timeout 2m]    refused while a volume is being created from it
              volume register <file.json>                   register the volume(s) in the file (claim-service POST /v1/volumes)
              volume status [id] [-w [--interval 1s]]       all volumes, or one with its claims (and, for a volume
                                                            created through the services that its plugin's
                                                            ListVolumes no longer lists, "listing: abnormal: ...");
                                                            -w follows: printed
                                                            again whenever it changes, woken by claim-service's live
                                                            events (every --interval if they are not available to
                                                            the token); Ctrl-C ends it, or --for 5m
              volume deregister <id> [-force]               remove (force: release every claim first)
              volume detach <id> <node> [--force]           unmount the volume on <node> first: its claims are freed
                                                            once the node reports the unmount (a node whose lease
                                                            lapsed: once the fence wait has passed); prints each
                                                            claim: detaching, freed, or waiting (time left).
                                                            --force frees them at once: only if the node is
                                                            powered off (a running node may still write)
              volume claim <id> --alloc A --node N --mode read|write [--access-mode M] [--attachment-mode M]
                           [--mount-flag F ...] [--trust-file FILE]
                                                            mount flags (repeat the option) replace the volume's; they
                                                            travel sealed for claim-service's public key, found in the
                                                            trust file: --trust-file FILE, else env CSI_TRUST_FILE, else
                                                            `up`'s (.csi/up/security/identities/trust.json); a wait
                                                            prints progress every 5 s
              volume release <id> --alloc A                 publish claim-requested, wait for claim-status
              plugin status [id]                            plugins, or one with its instances per node
              node status [node]                            each node's lease (plugin-registry-service GET /v1/nodes):
                                                            epoch, state (valid, lapsed, fenced), last renewal,
                                                            expiry (the registry's estimate), fenced epoch
                                                            and placement (claim-service): what schedulers read on
                                                            the placement topic, topology, volumes held / limit, health
              events [-json] [--for D]                      tail claim-status, node-events and volume-status (results
                                                            of creates, deletes and expansions of volumes and creates
                                                            and deletes of snapshots) from now:
                                                            a line per event (-json: one JSON object per line) until
                                                            Ctrl-C or D

            The status page: <claim-service URL>/status/ (`up` prints it): volumes, claims, plugins and a live feed.
              status-page [--no-open]      a one-time login link to it (good once, for 60 s: the browser gets this
                                           CLI's token as the page's cookie; the token is never shown); opened with
                                           xdg-open when there is a display, else printed

            Tests: ./csi test [maven args]  checks the machine's tools (cli/prerequisites.sh; as root installs what is
                                           missing with apt-get), then ./mvnw -B verify [maven args]

            Tokens (README "Security"; signed with the key `up` made under <work-dir>/security):
              token init                   make the key set and an admin token in the work dir (no system started)
              token issue --role R[,R] [--namespace N[,N]] [--ttl 8h] [--subject S]
                                           print a bearer token (roles volume-read, volume-write, volume-mount,
                                           volume-detach, plugin-read, admin; namespaces default *)
              token revoke <token id>      refuse that token from now on (no restart)
              token roll-key [--retire]    sign with a new key, keep the old one accepted; --retire drops old keys
              identity join-node <id>      make a node's record-signing key and its sealing key (0600) and trust
                                           them; `up` makes its nodes'
              identity scheduler <id>      the same for a scheduler (claim requests); `up` makes scheduler:csi-cli's
              identity claim-service       claim-service's sealing key (schedulers seal mount flags for it)
              identity rotate <principal>  a new key for node:<id> (signing and sealing) / scheduler:<id> /
                                           claim-service (sealing); the old one stays trusted and keeps opening
              identity retire <principal>  drop that principal's old keys from the trust file (and its key file)
              identity list                the trust file's keys

            Kafka credentials of nodes and schedulers (expiring delegation tokens or client certificates; the broker's
            admin of `up` issues them):
              kafka-credential issue node:<id>|scheduler:<id> [--ttl 30d] [--out F]
                                           the principal's ACLs and a new token in F (0600; default
                                           <work-dir>/kafka-credentials/<principal>.token): give it to that worker
                                           or scheduler as CSI_KAFKA_TOKEN_FILE; `up` issues its nodes' at each start
              kafka-credential issue node:<id>|scheduler:<id> --kind cert [--ttl 30d] [--out DIR]
                                           the ACLs and a client certificate: kafka-client.key, kafka-client.pem and
                                           ca.pem in DIR (0600; default <work-dir>/kafka-credentials/<principal>/),
                                           for the broker's SSL listener; `up` gives its nodes one at each start
              kafka-credential renew --token-file F [--ttl 30d]
                                           it lives that much longer from now (at most its issued lifetime); no restart
              kafka-credential renew node:<id>|scheduler:<id> --kind cert [--ttl 30d] [--out DIR]
                                           a new key and certificate in DIR (the old one valid until it expires)
              kafka-credential revoke node:<id>|scheduler:<id>
                                           every token and certificate of the principal refused from now on, its
                                           ACLs dropped (a later issue grants them again)
              kafka-credential list node:<id>|scheduler:<id>
                                           its live tokens and their expiry

            Upstream schedulers (issue 33):
              scheduler init <id> [--out DIR] [--ttl 30d]
                                           the scheduler kit in DIR (default ./scheduler-<id>): Kafka client
                                           certificate, CA, signing key (trusted), claim-service's sealing key,
                                           librdkafka and Java client settings, scheduler.env
              scheduler check <id> [--last 20]
                                           its records on claim-requested-dead-letter, with the reason of each

            Options: -json (machine output), --namespace NS (default "default"), --timeout SECONDS,
              --claims-url URL (env CSI_CLAIMS_URL), --registry-url URL (env CSI_REGISTRY_URL),
              --kafka HOST:PORT (env CSI_KAFKA_BOOTSTRAP), --topic-prefix P (env CSI_TOPICS_PREFIX);
              defaults: what `./csi up` wrote in .csi/up/endpoints.properties, else localhost:8081/8082/9092.
              Credentials: --token-file F, else env CSI_TOKEN, else the admin token `./csi up` wrote
              (.csi/up/admin.token, or <work-dir>/admin.token).
            """;

    private Main() {
    }

    public static void main(String[] argv) {
        System.exit(run(argv, System.out, System.err));
    }

    static Path home(Args args) {
        String home = args.option("home").orElse(System.getProperty("csi.home", System.getenv("CSI_HOME")));
        return Path.of(home == null ? "." : home).toAbsolutePath().normalize();
    }

    public static int run(String[] argv, PrintStream out, PrintStream err) {
        if (argv.length == 0 || Set.of("help", "-h", "--help", "-help").contains(argv[0])) {
            out.print(USAGE);
            return argv.length == 0 ? 2 : 0;
        }
        String command = argv[0];
        String[] rest = Arrays.copyOfRange(argv, 1, argv.length);
        try {
            Args args = Args.parse(rest);
            if (args.flag("help")) {
                // `./csi chaos --help` must not start a 20-minute run, nor `volume detach .. --help` detach anything
                out.print(USAGE);
                return 0;
            }
            // Kafka credentials and scheduler key of `up` in this work dir (`--work-dir`, else <home>/.csi/up), unless
            // CSI_KAFKA_* / CSI_IDENTITY_KEY_FILE say otherwise; a system this process started itself (a test's
            // cluster) keeps its own unless --work-dir names another
            if (args.option("work-dir").isPresent() || !CliKafkaSecurity.setByCluster()) {
                CliKafkaSecurity.useWorkDir(Up.workDir(args, home(args)));
                String keyFile = System.getenv("CSI_IDENTITY_KEY_FILE");
                ClaimClient.signWithKeyFile(keyFile != null ? Path.of(keyFile) : Up.workDir(args, home(args))
                        .resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR)
                        .resolve("scheduler-" + ClaimClient.CLI_SCHEDULER + ".key"));
            }
            return switch (command) {
                case "demo" -> {
                    args.only(Set.of("work-dir", "json-logs")).atMost(0);
                    Path home = home(args);
                    Path work = args.option("work-dir").map(Path::of).orElse(home.resolve(".csi").resolve("demo-"
                            + DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").format(ZonedDateTime.now(ZoneOffset.UTC))));
                    yield new Demo(new Cluster(home, work, Cluster.Ports.free(), false)
                            .measuredRuntime(Cluster.measuredRuntimeWanted())
                            .jsonLogs(args.flag("json-logs")), out).run();
                }
                case "up" -> Up.up(args.only(Set.of("work-dir", "json-logs", "fresh", "free-ports", "simulated-nodes",
                        "plugin-delay")).atMost(0), home(args),
                        out, err);
                case "down" -> Up.down(args.only(Set.of("work-dir")).atMost(0), home(args), out, err);
                case "restart" -> Up.restart(args.only(Set.of("work-dir")).atMost(1), home(args), out, err);
                case "chaos" -> new Chaos(args.only(Set.of("work-dir", "short", "faults", "rate", "volumes", "outage",
                        "json", "converge-limit", "env", "fence-slack")).atMost(1), home(args), out).run();
                case "bench" -> new Bench(args.only(Bench.OPTIONS).atMost(1),
                        Endpoints.resolve(args, System.getenv(), home(args)), out).run();
                case "token" -> new TokenCommand(args.only(TokenCommand.OPTIONS), home(args), out, err).run();
                case "kafka-credential" -> new KafkaCredentialCommand(args.only(KafkaCredentialCommand.OPTIONS), home(args),
                        out).run();
                case "scheduler" -> new SchedulerCommand(args.only(SchedulerCommand.OPTIONS), home(args), out).run();
                case "identity" -> new IdentityCommand(args.only(IdentityCommand.OPTIONS), home(args), out).run();
                case "status-page" -> StatusPage.run(args.only(StatusPage.OPTIONS).atMost(0),
                        Endpoints.resolve(args, System.getenv(), home(args)), System.getenv(), out, err);
                case "events" -> Follow.events(Endpoints.resolve(args.only(Set.of("for")).atMost(0), System.getenv(),
                        home(args)), args.flag("json"), Follow.deadline(args), out);
                case "volume", "plugin", "node" -> new Operator(args, Endpoints.resolve(args, System.getenv(), home(args)), out, err)
                        .run(command);
                default -> throw new Args.UsageException("unknown command '" + command + "'");
            };
        } catch (Args.UsageException e) {
            err.println("error: " + e.getMessage());
            err.println("run ./csi help for the commands");
            return 2;
        } catch (Http.UnreachableException | Operator.Failure e) {
            err.println("error: " + e.getMessage());
            return 1;
        } catch (org.apache.kafka.common.KafkaException e) {
            err.println("error: Kafka: " + e.getMessage());
            return 1;
        } catch (Exception e) {
            err.println("error: " + e);
            return 1;
        }
    }
}
