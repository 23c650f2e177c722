package io.csiorchestrator.cli;

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
        Cluster.Ports ports = Cluster.Ports.defaults();
        for (int port : List.of(ports.claims(), ports.registry(), ports.workers().get("node-1"),
                ports.workers().get("node-2"))) {
            if (!Cluster.portFree(port)) {
                err.println("error: port " + port + " is taken (the services listen on 8081-8084)");
                return 1;
            }
        }
        Files.deleteIfExists(work.resolve(Cluster.PIDS));
        Files.deleteIfExists(work.resolve(Infra.FILE));
        Files.deleteIfExists(work.resolve(Endpoints.FILE));
        Cluster cluster = new Cluster(home, work, ports, true).jsonLogs(args.flag("json-logs"));
        Steps steps = new Steps(out, 5);
        boolean ok = steps.run("start Kafka (KRaft) and PostgreSQL", () -> {
            cluster.prepare();
            cluster.startInfra();
            return null;
        }) && steps.run("start plugin-registry-service and claim-service", () -> {
            Cluster.Proc registry = cluster.startRegistry();
            Cluster.Proc claims = cluster.startClaims();
            cluster.awaitReady(registry, cluster.registryUrl(), Demo.START_TIMEOUT);
            cluster.awaitReady(claims, cluster.claimsUrl(), Demo.START_TIMEOUT);
            return null;
        }) && steps.run("start the hostpath plugin on node-1 and node-2", () -> {
            for (String node : Cluster.NODES) {
                cluster.startPlugin(node);
            }
            return null;
        }) && steps.run("start node-mount-worker on node-1 and node-2", () -> {
            List<Cluster.Proc> workers = new java.util.ArrayList<>();
            for (String node : Cluster.NODES) {
                workers.add(cluster.startWorker(node));
            }
            for (int i = 0; i < workers.size(); i++) {
                cluster.awaitReady(workers.get(i), cluster.workerUrl(Cluster.NODES.get(i)), Demo.START_TIMEOUT);
            }
            return null;
        }) && steps.run("write " + Endpoints.FILE, () -> {
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
        out.println("plugin-registry-service  " + cluster.registryUrl() + "   (REST /v1/plugins)");
        out.println("kafka bootstrap          " + cluster.kafkaBootstrap());
        for (String node : Cluster.NODES) {
            out.println(node + " plugins dir      " + cluster.pluginsDir(node)
                    + "   (a CSI plugin at <dir>/<plugin-id>/csi.sock is picked up; worker " + cluster.workerUrl(node) + ")");
        }
        out.println("hostpath shared dir      " + cluster.hostpathShared() + "   (volumes/, controller-state.json)");
        out.println("logs                     " + cluster.logs());
        out.println("stop with                ./csi down");
        return 0;
    }

    static int down(Args args, Path home, PrintStream out, PrintStream err) throws IOException {
        Path work = workDir(args, home);
        List<Cluster.Proc> procs = Cluster.readPids(work);
        if (procs.isEmpty() && (!Files.isDirectory(work) || Mounts.under(work).isEmpty())) {
            out.println("csi down: nothing running in " + work);
            return 0;
        }
        for (Cluster.Proc proc : procs) {
            out.println("stopping " + proc.name() + " (pid " + proc.handle().pid() + ")");
        }
        List<String> killed = Cluster.stop(procs, Duration.ofSeconds(30));
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
        Files.deleteIfExists(work.resolve(Infra.FILE));
        if (!left.isEmpty()) {
            err.println("csi down: still mounted: " + left);
            return 1;
        }
        out.println("csi down: stopped; no mount left under " + work);
        return 0;
    }
}
