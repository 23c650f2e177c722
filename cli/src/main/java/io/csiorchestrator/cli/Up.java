package io.csiorchestrator.cli;

import io.csiorchestrator.localinfra.FreePorts;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** {@code csi up} and {@code csi down}. */
final class Up {

    private Up() {
    }

    static Path workDir(Args args, Path home) {
        return args.option("work-dir").map(Path::of).orElse(home.resolve(".csi").resolve("up"))
                .toAbsolutePath().normalize();
    }

    static int up(Args args, Path home, PrintStream out, PrintStream err) throws IOException {
        Path work = workDir(args, home);
        if (!Cluster.readPids(work).isEmpty()) {
            err.println("error: the system in " + work + " is running already; ./csi down first");
            return 1;
        }
        // --simulated-nodes N: N simulated nodes (module node-simulator, one process) instead of the two real
        // workers and hostpath plugins; its health and metrics on 8083.
        int simulated = simulatedNodes(args);
        String pluginDelay = args.option("plugin-delay").orElse("1ms");
        if (simulated == 0 && args.option("plugin-delay").isPresent()) {
            throw new Args.UsageException("--plugin-delay goes with --simulated-nodes");
        }
        // --free-ports: the services on free ports instead of 8081-8084 (a second system beside one, the tests).
        Cluster.Ports ports = args.flag("free-ports") ? Cluster.Ports.free() : Cluster.Ports.defaults();
        int simulatorPort = args.flag("free-ports") ? FreePorts.take() : 8083;
        List<Integer> needed = simulated > 0 ? List.of(ports.claims(), ports.registry(), simulatorPort)
                : List.of(ports.claims(), ports.registry(), ports.workers().get("node-1"), ports.workers().get("node-2"));
        for (int port : needed) {
            if (!FreePorts.free(port)) {
                err.println("error: port " + port + " is taken (the services listen on 8081-8084)");
                return 1;
            }
        }
        if (args.flag("fresh")) {
            List<String> unmounted = Files.isDirectory(work) ? Mounts.unmountAllUnder(work) : List.of();
            if (!Mounts.under(work).isEmpty()) {
                err.println("error: still mounted under " + work + ": " + Mounts.under(work));
                return 1;
            }
            deleteTree(work);
            out.println("csi up --fresh: starting empty (removed " + work + (unmounted.isEmpty() ? "" : "; unmounted "
                    + unmounted) + ")");
        } else if (Files.isDirectory(work.resolve(Cluster.POSTGRES)) || Files.isDirectory(work.resolve(Cluster.KAFKA))) {
            out.println("csi up: keeping the state in " + work + " (Kafka's log, PostgreSQL's data, the hostpath volumes,"
                    + " the workers' records); ./csi up --fresh starts empty");
        }
        Files.deleteIfExists(work.resolve(Cluster.PIDS));
        Files.deleteIfExists(work.resolve(Endpoints.FILE));
        Cluster cluster = new Cluster(home, work, ports, true).durable(true).measuredRuntime(Cluster.measuredRuntimeWanted())
                .pluginProbeEvery(null) // the worker's default, as on a production node (Cluster.pluginProbeEvery)
                .aotCache(Cluster.measuredRuntimeWanted()).jsonLogs(args.flag("json-logs"))
                .simulated(simulated, simulatorPort, pluginDelay);
        Steps steps = new Steps(out, simulated > 0 ? 4 : 5);
        boolean started = steps.run("start Kafka (KRaft) and PostgreSQL", () -> {
            cluster.prepare();
            cluster.startInfra();
            return null;
        }) && serviceJavaLines(steps.run("start plugin-registry-service and claim-service", () -> {
            Cluster.Proc registry = cluster.startRegistry();
            Cluster.Proc claims = cluster.startClaims();
            cluster.awaitReady(registry, cluster.registryUrl(), Demo.START_TIMEOUT);
            cluster.awaitReady(claims, cluster.claimsUrl(), Demo.START_TIMEOUT);
            return null;
        }), cluster, out);
        boolean ok = started && (simulated > 0 ? steps.run("start " + simulated + " simulated nodes ("
                + Cluster.SIM_NODE_PREFIX + "1.." + Cluster.SIM_NODE_PREFIX + simulated + ", node-simulator, plugin "
                + Cluster.SIM_PLUGIN_ID + ", " + pluginDelay + " per plugin call)", () -> {
            Cluster.Proc simulator = cluster.startSimulator();
            cluster.awaitReady(simulator, cluster.simulatorUrl(), Demo.START_TIMEOUT);
            cluster.awaitSimulatedNodesRegistered(simulator, Demo.START_TIMEOUT);
            return null;
        }) : steps.run("start the hostpath plugin on node-1 and node-2", () -> {
            cluster.startPlugins(Cluster.NODES);
            return null;
        }) && serviceJavaLines(steps.run("start node-mount-worker on node-1 and node-2", () -> {
            List<Cluster.Proc> workers = new java.util.ArrayList<>();
            for (String node : Cluster.NODES) {
                workers.add(cluster.startWorker(node));
            }
            for (int i = 0; i < workers.size(); i++) {
                cluster.awaitReady(workers.get(i), cluster.workerUrl(Cluster.NODES.get(i)), Demo.START_TIMEOUT);
            }
            // A worker's readiness is its own, not its plugins' (issue 12): `up` is done once the registry counts
            // the hostpath plugin healthy on every node and claim-service places on each, so a claim right after
            // `up` finds it.
            cluster.awaitPluginRegistered(Cluster.PLUGIN_ID, Cluster.NODES.size(), workers.get(0), Demo.START_TIMEOUT);
            return null;
        }), cluster, out)) && steps.run("write " + Endpoints.FILE, () -> {
            cluster.writeEndpoints();
            return null;
        });
        if (!ok) {
            Steps.Result failed = steps.firstFailure();
            err.println("csi up: FAILED at '" + failed.name() + "'; logs in " + cluster.logs() + "; stopping");
            cluster.stopAll(Duration.ofSeconds(30));
            Mounts.unmountAllUnder(work);
            return 1;
        }
        out.println();
        out.println("claim-service            " + cluster.claimsUrl() + "   (REST /v1/volumes)");
        out.println("status page              " + cluster.claimsUrl() + "/status/   (volumes, claims, plugins, live events;"
                + " log in: ./csi status-page opens a one-time link, or type the token in " + work.resolve(Cluster.ADMIN_TOKEN)
                + ")");
        out.println("plugin-registry-service  " + cluster.registryUrl() + "   (REST /v1/plugins)");
        out.println("kafka bootstrap          " + cluster.kafkaBootstrap());
        if (simulated > 0) {
            out.println("simulated nodes          " + Cluster.SIM_NODE_PREFIX + "1.." + Cluster.SIM_NODE_PREFIX + simulated
                    + "   (health and metrics " + cluster.simulatorUrl() + "; roots " + cluster.simulatedNodesDir() + ")");
            out.println("simulated plugin         " + Cluster.SIM_PLUGIN_ID + "   (no CreateVolume: register volumes with"
                    + " \"pluginId\": \"" + Cluster.SIM_PLUGIN_ID + "\" and any externalId)");
        } else {
            for (String node : Cluster.NODES) {
                out.println(node + " plugins dir      " + cluster.pluginsDir(node)
                        + "   (a CSI plugin at <dir>/<plugin-id>/csi.sock is picked up; worker " + cluster.workerUrl(node)
                        + ")");
            }
            out.println("hostpath shared dir      " + cluster.hostpathShared() + "   (volumes/, controller-state.json, controller-publications.json)");
        }
        out.println("kafka log                " + cluster.kafkaDir() + "   (./csi restart kafka)");
        out.println("postgresql data          " + cluster.postgresDir().resolve("data") + "   (server pid "
                + cluster.postmasterPid().map(String::valueOf).orElse("?") + "; ./csi restart postgres)");
        out.println("identities               " + work.resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR)
                + "   (trust.json; each node's and claim-service's keys, owner-only; ./csi identity)");
        out.println("logs                     " + cluster.logs());
        out.println("stop with                ./csi down");
        return 0;
    }

    /**
     * Under the step that started Quarkus services on {@value Cluster#SERVICE_JAVA_HOME_ENV}'s JDK, a line per service
     * saying whether it uses its AOT cache or writes one (none without that setting); {@code stepOk} as is.
     */
    private static boolean serviceJavaLines(boolean stepOk, Cluster cluster, PrintStream out) {
        for (String line : cluster.takeServiceJavaLines()) {
            out.println("         " + line);
        }
        return stepOk;
    }

    /** {@code --simulated-nodes N}: 0 without it. */
    static int simulatedNodes(Args args) {
        String value = args.option("simulated-nodes").orElse(null);
        if (value == null) {
            return 0;
        }
        try {
            int n = Integer.parseInt(value);
            if (n < 1 || n > 10_000) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new Args.UsageException("--simulated-nodes must be a whole number from 1 to 10000, not '" + value + "'");
        }
    }

    static int down(Args args, Path home, PrintStream out, PrintStream err) throws IOException {
        Path work = workDir(args, home);
        List<Cluster.Proc> procs = Cluster.readPids(work);
        if (procs.isEmpty() && (!Files.isDirectory(work) || Mounts.under(work).isEmpty())) {
            FenceGuards.stopUnder(work).forEach(pid -> out.println("stopped the fence guard pid " + pid));
            out.println("csi down: nothing running in " + work);
            return 0;
        }
        for (Cluster.Proc proc : procs) {
            List<String> arguments = proc.handle().info().arguments().map(List::of).orElse(List.of());
            String cache = ServiceJava.writesCacheAtExit(arguments)
                    ? ": it writes its AOT cache as it stops (none was usable when it started), so this stop takes longer" : "";
            out.println("stopping " + proc.name() + " (pid " + proc.handle().pid() + ")" + cache);
        }
        List<String> killed = Cluster.stop(procs, Duration.ofSeconds(30), work);
        if (!killed.isEmpty()) {
            err.println("csi down: had to SIGKILL " + killed);
        }
        List<String> mounts = Mounts.unmountAllUnder(work);
        for (String mount : mounts) {
            out.println("unmounted " + mount);
        }
        List<String> left = Mounts.under(work);
        Files.deleteIfExists(work.resolve(Cluster.PIDS));
        Files.deleteIfExists(work.resolve(Endpoints.FILE));
        if (!left.isEmpty()) {
            err.println("csi down: still mounted: " + left);
            return 1;
        }
        out.println("csi down: stopped; no mount left under " + work + "; the state stays there for the next ./csi up"
                + " (./csi up --fresh starts empty)");
        return 0;
    }

    /**
     * {@code csi restart kafka|postgres}: stops that process of the running system (SIGTERM, SIGKILL after
     * 30 s; nothing to stop if it died) and starts it again on its kept directory and port, so the services,
     * which keep running, reconnect to it.
     */
    static int restart(Args args, Path home, PrintStream out, PrintStream err) throws IOException {
        Path work = workDir(args, home);
        String name = args.positional(0, "kafka or postgres");
        if (!name.equals(Cluster.KAFKA) && !name.equals(Cluster.POSTGRES)) {
            throw new Args.UsageException("restart takes kafka or postgres, not '" + name + "'");
        }
        List<Cluster.Proc> running = Cluster.readPids(work);
        if (running.isEmpty()) {
            err.println("error: nothing running in " + work + "; ./csi up first");
            return 1;
        }
        Cluster cluster = new Cluster(home, work, Cluster.Ports.defaults(), true).durable(true)
                .measuredRuntime(Cluster.measuredRuntimeWanted());
        List<Cluster.Proc> old = running.stream().filter(p -> p.name().equals(name)).toList();
        for (Cluster.Proc proc : old) {
            out.println("stopping " + name + " (pid " + proc.handle().pid() + ")");
        }
        List<String> killed = Cluster.stop(old, Duration.ofSeconds(30));
        if (!killed.isEmpty()) {
            err.println("csi restart: had to SIGKILL " + killed);
        }
        Cluster.Proc proc = name.equals(Cluster.KAFKA) ? cluster.startKafka() : cluster.startPostgres();
        try {
            cluster.awaitInfra(proc, name.equals(Cluster.KAFKA) ? cluster.kafkaDir() : cluster.postgresDir());
        } catch (RuntimeException e) {
            err.println("csi restart: " + name + " did not start: " + e.getMessage() + "; log " + proc.log());
            return 1;
        }
        out.println("csi restart: " + name + " runs again (pid " + proc.handle().pid()
                + (name.equals(Cluster.POSTGRES) ? ", server pid " + cluster.postmasterPid().map(String::valueOf).orElse("?")
                : "") + ")");
        return 0;
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            for (Path path : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
