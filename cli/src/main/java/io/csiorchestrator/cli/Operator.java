package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.WireValue;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The operator commands: {@code volume ...}, {@code plugin ...} and {@code node ...}. */
final class Operator {

    /** A command that reached the service and failed: message for the person, exit 1. */
    static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    /** How often a claim or release still waiting for its answer says so, with the time elapsed. */
    static final Duration PROGRESS_EVERY = Duration.ofSeconds(5);

    private final Args args;
    private final Endpoints endpoints;
    private final PrintStream out;
    private final PrintStream err;
    private final boolean json;
    private final String namespace;
    /** {@code volume status -w}: looked at again at least this often while live events wake it (a lost event). */
    static final Duration WATCH_SAFETY_REFRESH = Duration.ofSeconds(30);
    private final java.util.Map<String, String> env;

    Operator(Args args, Endpoints endpoints, PrintStream out, PrintStream err) {
        this(args, endpoints, out, err, System.getenv());
    }

    Operator(Args args, Endpoints endpoints, PrintStream out, PrintStream err, java.util.Map<String, String> env) {
        this.env = env;
        this.args = args;
        this.endpoints = endpoints;
        this.out = out;
        this.err = err;
        this.json = args.flag("json");
        this.namespace = args.option("namespace").orElse("default");
    }

    int run(String noun) throws IOException {
        String verb = args.positional(0, noun + " subcommand");
        if (noun.equals("node")) {
            if (!verb.equals("status")) {
                throw new Args.UsageException("unknown command 'node " + verb + "'");
            }
            args.only(Set.of()).atMost(2);
            return nodeStatus(args.positionalOpt(1).orElse(null));
        }
        if (noun.equals("plugin")) {
            if (!verb.equals("status")) {
                throw new Args.UsageException("unknown command 'plugin " + verb + "'");
            }
            args.only(Set.of()).atMost(2);
            return pluginStatus(args.positionalOpt(1).orElse(null));
        }
        return switch (verb) {
            case "create" -> args.option("capacity").isPresent()
                    ? provision(args.only(Set.of("plugin", "capacity", "capacity-max", "access-mode", "attachment-mode",
                            "fs-type", "parameter", "topology", "source-volume", "source-snapshot", "timeout")).atMost(2).positional(1, "volume id"))
                    : create(args.only(Set.of("plugin", "work-dir")).atMost(2).positional(1, "volume name"));
            case "delete" -> deleteProvisioned(args.only(Set.of("timeout")).atMost(2).positional(1, "volume id"));
            case "expand" -> expand(args.only(Set.of("capacity", "timeout")).atMost(2).positional(1, "volume id"));
            case "snapshot" -> snapshot(args.positional(1, "snapshot verb (create, list, delete)"));
            case "register" -> register(args.only(Set.of()).atMost(2).positional(1, "volume file"));
            case "status" -> {
                String id = args.only(Set.of("w", "watch", "for", "interval")).atMost(2).positionalOpt(1).orElse(null);
                if (args.flag("w") || args.flag("watch")) {
                    Duration every = Follow.parseDuration(args.option("interval").orElse("1s"));
                    String volume = id == null ? null : namespace + "/" + id;
                    try (LiveChanges changes = LiveChanges.follow(endpoints.claimsUrl(), endpoints.token(),
                            entry -> !"plugin-status".equals(entry.path("topic").asText())
                                    && (volume == null || volume.equals(entry.path("volume").asText())), every, err)) {
                        yield Follow.watch(() -> {
                            java.io.ByteArrayOutputStream buffer = new java.io.ByteArrayOutputStream();
                            new Operator(args, endpoints, new PrintStream(buffer, true, StandardCharsets.UTF_8), err, env)
                                    .volumeStatus(id);
                            return buffer.toString(StandardCharsets.UTF_8);
                        }, changes, every, WATCH_SAFETY_REFRESH, Follow.deadline(args), out);
                    }
                }
                yield volumeStatus(id);
            }
            case "deregister" -> deregister(args.only(Set.of("force")).atMost(2).positional(1, "volume id"));
            case "detach" -> {
                args.only(Set.of("force")).atMost(3);
                yield detach(args.positional(1, "volume id"), args.positional(2, "node id"), args.flag("force"));
            }
            case "claim" -> claim(args.only(Set.of("alloc", "node", "mode", "access-mode", "attachment-mode",
                    "timeout", "read-only", "mount-flag", "trust-file", "work-dir")).atMost(2).positional(1, "volume id"));
            case "release" -> release(args.only(Set.of("alloc", "timeout")).atMost(2).positional(1, "volume id"));
            default -> throw new Args.UsageException("unknown command 'volume " + verb + "'");
        };
    }

    private Http claims() {
        return new Http("claim-service", endpoints.claimsUrl(), endpoints.token());
    }

    private Http registry() {
        return new Http("plugin-registry-service", endpoints.registryUrl(), endpoints.token());
    }

    // ------------------------------------------------------------------ volumes

    int register(String file) throws IOException {
        String body;
        try {
            body = Files.readString(Path.of(file));
        } catch (NoSuchFileException e) {
            throw new Failure("no such file: " + file);
        }
        try {
            Http.MAPPER.readTree(body);
        } catch (IOException e) {
            throw new Failure(file + " is not JSON: " + e.getMessage().lines().findFirst().orElse(""));
        }
        Http.Response r = claims().post("/v1/volumes", body);
        if (r.status() == 201) {
            if (json) {
                out.println(r.raw());
            } else {
                for (JsonNode id : r.body().path("registered")) {
                    out.println("registered volume " + id.asText());
                }
            }
            return 0;
        }
        if (r.status() == 400 && r.body() != null && r.body().has("problems")) {
            if (json) {
                out.println(r.raw());
            } else {
                err.println("error: " + r.error());
                Table table = new Table("FIELD", "VALUE", "PROBLEM");
                for (JsonNode p : r.body().path("problems")) {
                    table.row(p.path("field").asText(), p.path("value").asText(), text(p, "message", "reason"));
                }
                err.print(table.render());
            }
            return 1;
        }
        throw new Failure("claim-service refused the registration (HTTP " + r.status() + "): " + r.error());
    }

    /** CreateVolume on the plugin of every node of the local system ({@code csi up}'s work dir). */
    /**
     * {@code volume create <id> --capacity SIZE ...} (issue 14): POST /v1/provisioned-volumes, then waits (up to
     * --timeout, default 2m) until claim-service reports the volume created (prints its externalId) or failed.
     */
    int provision(String id) {
        checkId("volume id", id);
        ObjectNode body = Http.MAPPER.createObjectNode();
        body.put("id", id).put("namespace", namespace).put("pluginId", args.option("plugin").orElse(Cluster.PLUGIN_ID))
                .put("accessMode", args.option("access-mode").orElse(AccessMode.SINGLE_NODE_WRITER.wire()))
                .put("attachmentMode", args.option("attachment-mode").orElse(AttachmentMode.FILE_SYSTEM.wire()))
                .put("capacityMin", args.option("capacity").orElseThrow());
        args.option("capacity-max").ifPresent(max -> body.put("capacityMax", max));
        args.option("fs-type").ifPresent(fs -> body.putObject("mountOptions").put("fsType", fs));
        if (args.option("source-volume").isPresent() && args.option("source-snapshot").isPresent()) {
            throw new Args.UsageException("a volume has one source: --source-volume or --source-snapshot");
        }
        args.option("source-volume").ifPresent(source -> body.putObject("source").put("volume", source));
        args.option("source-snapshot").ifPresent(source -> body.putObject("source").put("snapshot", source));
        ObjectNode parameters = body.putObject("parameters");
        for (String kv : args.options("parameter")) {
            String[] pair = keyValue(kv, "--parameter");
            parameters.put(pair[0], pair[1]);
        }
        ObjectNode topology = body.putObject("topology");
        for (String kv : args.options("topology")) {
            String[] pair = keyValue(kv, "--topology");
            topology.put(pair[0], pair[1]);
        }
        Http.Response r = claims().post("/v1/provisioned-volumes", body.toString());
        if (r.status() == 400 || r.status() == 409) {
            throw new Failure("volume " + namespace + "/" + id + " not created: " + r.error());
        }
        expectOk(r, "create volume " + id);
        Duration timeout = Follow.parseDuration(args.option("timeout").orElse("2m"));
        JsonNode done = Wait.until("volume " + namespace + "/" + id + " created", timeout, null, () -> {
            Http.Response p = claims().get("/v1/provisioned-volumes/" + enc(namespace) + "/" + enc(id));
            String phase = p.body() == null ? "" : p.body().path("phase").asText();
            return p.ok() && !phase.equals("creating") ? java.util.Optional.of(p.body()) : java.util.Optional.empty();
        });
        if (json) {
            out.println(done.toString());
        }
        if (!done.path("phase").asText().equals("created")) {
            throw new Failure("volume " + namespace + "/" + id + " not created: " + done.path("lastError").asText());
        }
        if (!json) {
            out.println("created volume " + namespace + "/" + id + " through plugin " + done.path("pluginId").asText()
                    + ": externalId " + done.path("externalId").asText() + ", capacity "
                    + done.path("capacityBytes").asLong() + " bytes; registered");
        }
        return 0;
    }

    /**
     * The phases a delete ends in when it failed: delete-failed, or create-failed again when the delete of a failed
     * create could not find its volume by name (claim-service's FINDING, issue 14).
     */
    static final Set<String> FAILED_DELETE = Set.of("delete-failed", "create-failed");

    /**
     * {@code volume delete <id>}: DELETE /v1/provisioned-volumes (refused while claimed), then waits until the
     * plugin deleted it and it is deregistered, or the delete failed.
     */
    int deleteProvisioned(String id) {
        checkId("volume id", id);
        String path = "/v1/provisioned-volumes/" + enc(namespace) + "/" + enc(id);
        Http.Response r = claims().delete(path);
        if (r.status() == 404) {
            throw new Failure("volume " + namespace + "/" + id + " was not created through the services"
                    + " (a registered volume is removed with 'volume deregister')");
        }
        if (r.status() == 409) {
            throw new Failure("volume " + namespace + "/" + id + " not deleted: " + r.error());
        }
        expectOk(r, "delete volume " + id);
        Duration timeout = Follow.parseDuration(args.option("timeout").orElse("2m"));
        String failed = Wait.until("volume " + namespace + "/" + id + " deleted", timeout, null, () -> {
            Http.Response p = claims().get(path);
            if (p.status() == 404) {
                return java.util.Optional.of("");
            }
            return p.ok() && FAILED_DELETE.contains(p.body().path("phase").asText())
                    ? java.util.Optional.of(p.body().path("lastError").asText()) : java.util.Optional.empty();
        });
        if (!failed.isEmpty()) {
            throw new Failure("volume " + namespace + "/" + id + " not deleted: " + failed);
        }
        out.println(json ? "{\"volume\":\"" + namespace + "/" + id + "\",\"deleted\":true}"
                : "deleted volume " + namespace + "/" + id + " (DeleteVolume done, deregistered)");
        return 0;
    }

    /**
     * {@code volume expand <id> --capacity SIZE [--timeout 2m]} (issue 14 item 3): POST
     * /v1/provisioned-volumes/{ns}/{id}/expand, then waits until claim-service reports the expansion done (created
     * again: ControllerExpandVolume and, where the plugin asks for it, NodeExpandVolume on each node where the volume
     * is claimed) or failed (the plugin's message).
     */
    int expand(String id) {
        checkId("volume id", id);
        String size = args.option("capacity").orElseThrow(() -> new Args.UsageException(
                "volume expand needs --capacity SIZE (bytes, or 2GiB, 500MiB, 2G)"));
        ObjectNode body = Http.MAPPER.createObjectNode();
        body.put("capacity", size);
        String path = "/v1/provisioned-volumes/" + enc(namespace) + "/" + enc(id);
        Http.Response r = claims().post(path + "/expand", body.toString());
        if (r.status() == 404) {
            throw new Failure("volume " + namespace + "/" + id + " was not created through the services;"
                    + " only such volumes can be expanded");
        }
        if (r.status() == 400 || r.status() == 409) {
            throw new Failure("volume " + namespace + "/" + id + " not expanded: " + r.error());
        }
        expectOk(r, "expand volume " + id);
        Duration timeout = Follow.parseDuration(args.option("timeout").orElse("2m"));
        JsonNode done = Wait.until("volume " + namespace + "/" + id + " expanded", timeout, null, () -> {
            Http.Response p = claims().get(path);
            String phase = p.body() == null ? "" : p.body().path("phase").asText();
            return p.ok() && (phase.equals("created") || phase.equals("expand-failed"))
                    ? java.util.Optional.of(p.body()) : java.util.Optional.empty();
        });
        if (json) {
            out.println(done.toString());
        }
        if (!done.path("phase").asText().equals("created")) {
            throw new Failure("volume " + namespace + "/" + id + " not expanded: " + done.path("lastError").asText());
        }
        if (!json) {
            out.println("expanded volume " + namespace + "/" + id + " to " + done.path("capacityBytes").asLong()
                    + " bytes (ControllerExpandVolume" + (r.status() == 200 ? ": it had that capacity already)"
                    : ", then NodeExpandVolume where the plugin asks for it)"));
        }
        return 0;
    }

    /**
     * {@code volume snapshot create <id> --volume SRC [--parameter k=v ...] [--timeout 2m]} (waits until created, i.e.
     * ready to use, or failed), {@code volume snapshot list}, {@code volume snapshot delete <id> [--timeout 2m]}
     * (issue 14 item 2) through claim-service's /v1/snapshots.
     */
    int snapshot(String verb) {
        String base = "/v1/snapshots/" + enc(namespace);
        Duration timeout = Follow.parseDuration(args.option("timeout").orElse("2m"));
        switch (verb) {
            case "create" -> {
                String id = args.only(Set.of("volume", "parameter", "timeout")).atMost(3).positional(2, "snapshot id");
                checkId("snapshot id", id);
                String source = args.option("volume").orElseThrow(() -> new Args.UsageException(
                        "volume snapshot create needs --volume <id of the volume to snapshot>"));
                checkId("volume id", source);
                ObjectNode body = Http.MAPPER.createObjectNode();
                body.put("namespace", namespace).put("id", id).put("sourceVolume", source);
                ObjectNode parameters = body.putObject("parameters");
                for (String kv : args.options("parameter")) {
                    String[] pair = keyValue(kv, "--parameter");
                    parameters.put(pair[0], pair[1]);
                }
                Http.Response r = claims().post("/v1/snapshots", body.toString());
                if (r.status() == 400 || r.status() == 409) {
                    throw new Failure("snapshot " + namespace + "/" + id + " not created: " + r.error());
                }
                expectOk(r, "create snapshot " + id);
                JsonNode done = Wait.until("snapshot " + namespace + "/" + id + " ready", timeout, null, () -> {
                    Http.Response p = claims().get(base + "/" + enc(id));
                    String phase = p.body() == null ? "" : p.body().path("phase").asText();
                    return p.ok() && !phase.equals("creating") ? java.util.Optional.of(p.body()) : java.util.Optional.empty();
                });
                if (!done.path("phase").asText().equals("created")) {
                    throw new Failure("snapshot " + namespace + "/" + id + " not created: " + done.path("lastError").asText());
                }
                out.println(json ? done.toString() : "created snapshot " + namespace + "/" + id + " of volume " + source
                        + ": externalId " + done.path("externalId").asText() + ", " + done.path("sizeBytes").asLong()
                        + " bytes; ready to use");
                return 0;
            }
            case "list" -> {
                args.only(Set.of()).atMost(2);
                Http.Response r = claims().get(base);
                expectOk(r, "list snapshots");
                if (json) {
                    out.println(r.body().toString());
                    return 0;
                }
                for (JsonNode s : r.body()) {
                    out.println(s.path("id").asText() + "  volume=" + s.path("sourceVolume").asText() + "  phase="
                            + s.path("phase").asText() + "  externalId=" + s.path("externalId").asText("-")
                            + "  sizeBytes=" + s.path("sizeBytes").asLong());
                }
                return 0;
            }
            case "delete" -> {
                String id = args.only(Set.of("timeout")).atMost(3).positional(2, "snapshot id");
                checkId("snapshot id", id);
                Http.Response r = claims().delete(base + "/" + enc(id));
                if (r.status() == 404 || r.status() == 409) {
                    throw new Failure("snapshot " + namespace + "/" + id + " not deleted: " + r.error());
                }
                expectOk(r, "delete snapshot " + id);
                String failed = Wait.until("snapshot " + namespace + "/" + id + " deleted", timeout, null, () -> {
                    Http.Response p = claims().get(base + "/" + enc(id));
                    if (p.status() == 404) {
                        return java.util.Optional.of("");
                    }
                    return p.ok() && FAILED_DELETE.contains(p.body().path("phase").asText())
                            ? java.util.Optional.of(p.body().path("lastError").asText()) : java.util.Optional.empty();
                });
                if (!failed.isEmpty()) {
                    throw new Failure("snapshot " + namespace + "/" + id + " not deleted: " + failed);
                }
                out.println(json ? "{\"snapshot\":\"" + namespace + "/" + id + "\",\"deleted\":true}"
                        : "deleted snapshot " + namespace + "/" + id + " (DeleteSnapshot done)");
                return 0;
            }
            default -> throw new Args.UsageException("unknown command 'volume snapshot " + verb + "' (create, list, delete)");
        }
    }

    private static String[] keyValue(String kv, String option) {
        int eq = kv.indexOf('=');
        if (eq < 1) {
            throw new Args.UsageException(option + " takes key=value, got '" + kv + "'");
        }
        return new String[] {kv.substring(0, eq), kv.substring(eq + 1)};
    }

    int create(String name) {
        String plugin = args.option("plugin").orElse(Cluster.PLUGIN_ID);
        checkId("plugin id", plugin);
        Path work = Up.workDir(args, Main.home(args));
        List<Path> sockets = new ArrayList<>();
        for (String node : Cluster.NODES) {
            Path socket = work.resolve(node).resolve("plugins").resolve(plugin).resolve("csi.sock");
            if (!Files.exists(socket)) {
                throw new Failure("no plugin socket " + socket + " (is the local system up? ./csi up)");
            }
            sockets.add(socket);
        }
        String id = PluginVolumes.create(name, sockets);
        if (json) {
            out.println("{\"name\":\"" + name + "\",\"pluginId\":\"" + plugin + "\",\"externalId\":\"" + id + "\"}");
        } else {
            out.println("created volume '" + name + "' on plugin " + plugin + " (nodes " + String.join(", ", Cluster.NODES)
                    + "): externalId " + id);
        }
        return 0;
    }

    int volumeStatus(String id) {
        if (id == null) {
            Http.Response r = claims().get("/v1/volumes?namespace=" + enc(namespace));
            expectOk(r, "list volumes");
            if (json) {
                out.println(r.raw());
                return 0;
            }
            Table table = new Table("ID", "NAMESPACE", "PLUGIN", "ACCESS MODE", "READERS", "WRITERS", "SCHEDULABLE",
                    "HEALTH");
            for (JsonNode v : r.body()) {
                table.row(v.path("id").asText(), v.path("namespace").asText(), v.path("pluginId").asText(),
                        v.path("accessMode").asText() + (v.path("deleting").asBoolean() ? " (deleting)" : ""),
                        v.path("currentReaders").asInt(), v.path("currentWriters").asInt(),
                        v.path("schedulable").asBoolean() ? "yes" : "no", v.path("health").asText("-"));
            }
            out.print(table.size() == 0 ? "No volumes in namespace " + namespace + "\n" : table.render());
            return 0;
        }
        JsonNode v = volume(id);
        if (json) {
            out.println(v.toPrettyString());
            return 0;
        }
        List<String[]> pairs = new ArrayList<>();
        for (String field : List.of("id", "namespace", "name", "externalId", "pluginId", "accessMode", "attachmentMode",
                "claimedAccessMode", "schedulable", "health", "deleting")) {
            JsonNode value = v.get(field);
            pairs.add(new String[] {field, value == null || value.isNull() ? "-" : value.asText()});
        }
        JsonNode listing = v.path("listing");
        if (listing.isObject()) {
            // issue 14: the plugin's ListVolumes no longer lists this volume created through the services
            pairs.add(new String[] {"listing", listing.path("condition").asText() + ": " + listing.path("message").asText()});
        }
        out.print(Table.keyValues(pairs));
        printClaims("Claims", v.path("claims"));
        printClaims("Past claims", v.path("pastClaims"));
        printConditions(v.path("conditions"));
        VolumeUsageTable.print(out, v.path("usage"));
        return 0;
    }

    /** The volume's CSI condition on each node where it is claimed, as that node's worker last reported it. */
    private void printConditions(JsonNode conditions) {
        out.println();
        out.println("Volume condition");
        if (!conditions.isArray() || conditions.isEmpty()) {
            out.println("No volume condition reported");
            return;
        }
        Table table = new Table("NODE", "CONDITION", "SINCE", "MESSAGE");
        for (JsonNode c : conditions) {
            table.row(c.path("nodeId").asText(), c.path("condition").asText(), c.path("since").asText("-"),
                    c.path("message").asText("-"));
        }
        out.print(table.render());
    }

    private void printClaims(String title, JsonNode claims) {
        out.println();
        out.println(title);
        if (!claims.isArray() || claims.isEmpty()) {
            out.println("No " + title.toLowerCase());
            return;
        }
        Table table = new Table("ALLOCATION", "NODE", "MODE", "STATE", "HOST PATH", "ERROR");
        for (JsonNode c : claims) {
            table.row(c.path("allocationId").asText(), c.path("nodeId").asText(), c.path("mode").asText(),
                    c.path("state").asText(), c.path("hostPath").asText("-"), c.path("lastError").asText("-"));
        }
        out.print(table.render());
    }

    int deregister(String id) {
        checkId("volume id", id);
        boolean force = args.flag("force");
        Http.Response r = claims().delete(volumePath(id) + (force ? "?force=true" : ""));
        if (r.status() == 404) {
            throw unknownVolume(id);
        }
        if (r.status() == 409) {
            throw new Failure("volume " + namespace + "/" + id + " is claimed: " + r.error()
                    + " (use -force to release every claim and deregister when the last is released)");
        }
        expectOk(r, "deregister volume " + id);
        if (json) {
            out.println(r.raw() == null || r.raw().isBlank() ? "{\"volume\":\"" + namespace + "/" + id + "\",\"status\":"
                    + r.status() + "}" : r.raw());
        } else if (r.status() == 202) {
            out.println("volume " + namespace + "/" + id + ": releasing every claim; deregistered once the last is released");
        } else {
            out.println("volume " + namespace + "/" + id + " deregistered");
        }
        return 0;
    }

    /** What {@code volume detach --force} says, in its help and its output. */
    static final String FORCE_WARNING = "--force frees the claims at once, without waiting for the node's unmount or"
            + " for its lease to lapse and its fence: use it only if the node is powered off (a node that still runs"
            + " may still write to the volume)";

    /**
     * {@code POST /v1/volumes/{ns}/{id}/detach?node=N[&force=true]}: prints what claim-service answered, claim by
     * claim when it lists them (detaching: unmounts sent, freed once the node reports them; freed; waiting for the
     * node's lease to lapse, with the time left), else its action and the allocations.
     */
    int detach(String id, String node, boolean force) {
        checkId("volume id", id);
        checkId("node id", node);
        Http.Response r = claims().post(volumePath(id) + "/detach?node=" + enc(node) + (force ? "&force=true" : ""), "");
        if (r.status() == 404) {
            throw unknownVolume(id);
        }
        expectOk(r, "detach volume " + id + " from " + node);
        if (json) {
            out.println(r.raw() == null || r.raw().isBlank() ? "{}" : r.raw());
            return 0;
        }
        JsonNode body = r.body() == null ? Http.MAPPER.createObjectNode() : r.body();
        if (force) {
            out.println("forced: " + FORCE_WARNING);
        }
        String action = text(body, "action", "message", "reason");
        out.println("volume " + namespace + "/" + id + " on node " + node + ": "
                + (action.equals("-") ? (r.status() == 202 ? "accepted" : "done") : action)
                + (body.hasNonNull("forcedBy") ? " (forced by " + body.get("forcedBy").asText() + ")" : ""));
        JsonNode claims = body.path("claims");
        if (claims.isArray() && !claims.isEmpty()) {
            Table table = new Table("ALLOCATION", "STATE", "DETAIL");
            for (JsonNode c : claims) {
                String detail = text(c, "reason", "detail", "message");
                if (c.hasNonNull("secondsLeft")) {
                    detail = (detail.equals("-") ? "" : detail + ", ") + c.get("secondsLeft").asLong() + " s left";
                }
                table.row(text(c, "allocationId", "allocation"), text(c, "state", "status"), detail);
            }
            out.print(table.render());
        } else if (body.path("allocations").isArray()) {
            List<String> allocations = new ArrayList<>();
            body.path("allocations").forEach(a -> allocations.add(a.asText()));
            out.println(allocations.isEmpty() ? "no claim of the volume on node " + node
                    : "claims: " + String.join(", ", allocations));
        }
        return 0;
    }

    // ------------------------------------------------------------------ nodes

    /**
     * {@code GET /v1/nodes} (a table: each node's lease epoch, state, last renewal, expiry as the registry
     * estimates it, fenced epoch) or {@code GET /v1/nodes/{id}} (the same for one node) of plugin-registry-service.
     */
    int nodeStatus(String nodeId) {
        Instant now = Instant.now();
        if (nodeId == null) {
            Http.Response r = registry().get("/v1/nodes");
            expectOk(r, "list nodes");
            if (json) {
                out.println(r.raw());
                return 0;
            }
            JsonNode nodes = r.body() != null && r.body().has("nodes") ? r.body().get("nodes") : r.body();
            Table table = new Table("NODE", "EPOCH", "STATE", "LAST RENEWAL", "EXPIRES", "FENCED EPOCH");
            java.util.Set<String> listed = new java.util.HashSet<>();
            if (nodes != null) {
                for (JsonNode n : nodes) {
                    JsonNode lease = n.path("lease");
                    listed.add(text(n, "nodeId", "id"));
                    table.row(text(n, "nodeId", "id"), text(lease, "epoch"), text(lease, "state"),
                            text(lease, "lastRenewedAt"), expiry(lease, now), text(lease, "fencedEpoch"));
                }
            }
            // a node whose plugins report to the registry but which never asked for a lease runs its worker with
            // fencing off: say so, rather than "No nodes"
            List<String> unfenced = nodesWithPlugins().stream().filter(n -> !listed.contains(n)).toList();
            unfenced.forEach(n -> table.row(n, "-", FENCING_OFF, "-", "-", "-"));
            out.print(table.size() == 0 ? "No nodes\n" : table.render());
            if (!unfenced.isEmpty()) {
                out.println("fencing off on " + String.join(", ", unfenced) + ": " + FENCING_OFF_WHY);
            }
            PlacementView.print(claims(), null, out);
            return 0;
        }
        checkId("node id", nodeId);
        Http.Response r = registry().get("/v1/nodes/" + enc(nodeId));
        if (r.status() == 404) {
            if (nodesWithPlugins().contains(nodeId)) {
                out.print(Table.keyValues(List.of(new String[] {"node", nodeId},
                        new String[] {"lease state", FENCING_OFF})));
                out.println("fencing off on " + nodeId + ": " + FENCING_OFF_WHY);
                return 0;
            }
            throw new Failure("node '" + nodeId + "' unknown to plugin-registry-service at " + endpoints.registryUrl());
        }
        expectOk(r, "get node " + nodeId);
        if (json) {
            out.println(r.body().toPrettyString());
            return 0;
        }
        JsonNode lease = r.body().path("lease");
        List<String[]> pairs = new ArrayList<>();
        pairs.add(new String[] {"node", text(r.body(), "nodeId", "id")});
        pairs.add(new String[] {"lease epoch", text(lease, "epoch")});
        pairs.add(new String[] {"lease state", text(lease, "state")});
        pairs.add(new String[] {"last renewal", text(lease, "lastRenewedAt")});
        pairs.add(new String[] {"expires", expiry(lease, now)});
        pairs.add(new String[] {"fenced epoch", text(lease, "fencedEpoch")});
        out.print(Table.keyValues(pairs));
        PlacementView.print(claims(), nodeId, out);
        return 0;
    }

    static final String FENCING_OFF = "none (fencing off)";
    static final String FENCING_OFF_WHY = "the worker asks for no lease (csi.worker.fencing.enabled=false), so a write"
            + " claim there is never failed over when the node is cut off; it waits for the node or a forced detach";

    /**
     * The nodes plugin-registry-service knows from their plugins' reports ({@code GET /v1/plugins}, then each plugin's
     * instances); empty if it lists none or cannot be read.
     */
    private java.util.SortedSet<String> nodesWithPlugins() {
        java.util.SortedSet<String> found = new java.util.TreeSet<>();
        Http.Response plugins = registry().get("/v1/plugins");
        if (!plugins.ok() || plugins.body() == null) {
            return found;
        }
        for (JsonNode p : plugins.body()) {
            String id = p.path("id").asText("");
            if (id.isEmpty() || PathSafeId.problem(id).isPresent()) {
                continue;
            }
            Http.Response detail = registry().get("/v1/plugins/" + enc(id));
            if (detail.ok() && detail.body() != null) {
                for (JsonNode i : detail.body().path("instances")) {
                    String node = i.path("nodeId").asText("");
                    if (!node.isEmpty()) {
                        found.add(node);
                    }
                }
            }
        }
        return found;
    }

    /** The registry's expiry estimate and how far it is from now: {@code 2026-11-24T21:00:30Z (in 12 s)}. */
    private static String expiry(JsonNode lease, Instant now) {
        String at = text(lease, "expiresAt");
        if (at.equals("-")) {
            return at;
        }
        try {
            return at + " (" + relative(Instant.parse(at), now) + ")";
        } catch (java.time.format.DateTimeParseException e) {
            return at;
        }
    }

    /** {@code in 12 s}, {@code 3 s ago}, {@code now}; whole seconds, rounded toward now. */
    static String relative(Instant at, Instant now) {
        long seconds = Duration.between(now, at).getSeconds();
        if (Duration.between(now, at).isNegative()) {
            seconds = -Duration.between(at, now).getSeconds();
        }
        if (seconds == 0) {
            return "now";
        }
        return seconds > 0 ? "in " + seconds + " s" : -seconds + " s ago";
    }

    // ------------------------------------------------------------------ claims over Kafka

    int claim(String id) {
        checkId("volume id", id);
        String alloc = args.required("alloc");
        String node = args.required("node");
        checkId("allocation id", alloc);
        checkId("node id", node);
        String modeText = args.required("mode");
        ClaimMode mode = switch (modeText) {
            case "read" -> ClaimMode.READ;
            case "write" -> ClaimMode.WRITE;
            default -> throw new Args.UsageException("--mode takes read or write, got '" + modeText + "'");
        };
        requireSigning();
        AccessMode accessMode;
        AttachmentMode attachmentMode;
        if (args.option("access-mode").isPresent() && args.option("attachment-mode").isPresent()) {
            accessMode = parse(AccessMode.class, "access-mode");
            attachmentMode = parse(AttachmentMode.class, "attachment-mode");
        } else {
            JsonNode v = volume(id); // the volume's own modes, unless given
            String claimed = v.path("claimedAccessMode").asText("");
            accessMode = args.option("access-mode").isPresent() ? parse(AccessMode.class, "access-mode")
                    : AccessMode.fromWire(claimed.isEmpty() || claimed.equals("null") ? v.path("accessMode").asText()
                    : claimed);
            attachmentMode = args.option("attachment-mode").isPresent() ? parse(AttachmentMode.class, "attachment-mode")
                    : WireValue.parse(AttachmentMode.class, v.path("attachmentMode").asText());
        }
        List<String> flags = args.options("mount-flag");
        ClaimRequested request;
        if (flags.isEmpty()) {
            request = ClaimClient.claim(namespace, id, alloc, node, mode, accessMode, attachmentMode);
        } else {
            io.csiorchestrator.events.identity.TrustSet.Entry claimService = ClaimServiceKey.resolve(
                    args.option("trust-file"), env, Up.workDir(args, Main.home(args)));
            try {
                request = ClaimClient.claim(namespace, id, alloc, node, mode, accessMode, attachmentMode, flags, claimService);
            } catch (IllegalArgumentException e) {
                throw new Args.UsageException("--mount-flag: " + e.getMessage());
            }
        }
        return await(request, ClaimState.READY);
    }

    int release(String id) {
        checkId("volume id", id);
        String alloc = args.required("alloc");
        checkId("allocation id", alloc);
        requireSigning();
        return await(ClaimClient.release(namespace, id, alloc), ClaimState.RELEASED);
    }

    /**
     * A closed broker (up's credential found) means the services verify signatures: without a scheduler key the request
     * would only be dead-lettered "unsigned", so it is refused here, before anything is sent, with the reason.
     */
    private static void requireSigning() {
        if (CliKafkaSecurity.resolve().secured()) {
            ClaimClient.cannotSign().ifPresent(reason -> {
                throw new Failure(reason);
            });
        }
    }

    private int await(ClaimRequested request, ClaimState wanted) {
        Duration timeout = Duration.ofSeconds(Long.parseLong(args.option("timeout").orElse("120")));
        ClaimClient client = new ClaimClient(endpoints.kafkaBootstrap(), endpoints.topicPrefix());
        long start = System.nanoTime();
        if (!json) {
            err.println("published claim-requested " + request.requestId() + " (" + request.mode().wire() + " "
                    + namespace + "/" + request.volumeId() + " for " + request.allocationId() + "), waiting for claim-status");
        }
        // Progress on a long wait: every PROGRESS_EVERY without an answer, the time so far and the last state seen.
        String[] lastState = {"none yet"};
        java.util.concurrent.ScheduledExecutorService ticker = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "csi-progress");
            t.setDaemon(true);
            return t;
        });
        if (!json) {
            ticker.scheduleAtFixedRate(() -> err.println("  ... still waiting for claim-status after "
                    + elapsed(start) + " (last: " + lastState[0] + ")"), PROGRESS_EVERY.toMillis(),
                    PROGRESS_EVERY.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        }
        ClaimClient.Outcome outcome;
        try {
            outcome = client.request(request, timeout, s -> {
                lastState[0] = s.state().wire();
                if (!json) {
                    err.printf("  %-9s at %-7s %s%n", s.state().wire(), elapsed(start), s.reason() == null ? "" : s.reason());
                }
            });
        } finally {
            ticker.shutdownNow();
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        if (json) {
            ObjectNode node = Http.MAPPER.createObjectNode();
            node.put("requestId", request.requestId());
            node.put("timedOut", outcome.timedOut());
            node.put("millis", ms);
            node.put("systemMillis", outcome.systemMillis());
            node.put("traceId", outcome.traceId());
            node.put("traceCarried", outcome.traceCarried());
            ArrayNode seen = node.putArray("statuses");
            outcome.seen().forEach(s -> seen.add(Http.MAPPER.valueToTree(s)));
            out.println(node.toPrettyString());
        } else if (outcome.is(wanted)) {
            out.println(wanted.wire() + " in " + Steps.seconds(ms)
                    + (outcome.last().hostPath() == null ? "" : ": " + outcome.last().hostPath())
                    + Demo.inSystem(outcome));
        } else {
            err.println("error: " + outcome.describe());
        }
        return outcome.is(wanted) ? 0 : 1;
    }

    /** The time since {@code start} (nanoTime), e.g. {@code 12.3 s}. */
    static String elapsed(long start) {
        return String.format(java.util.Locale.ROOT, "%.1f s", (System.nanoTime() - start) / 1e9);
    }

    // ------------------------------------------------------------------ plugins

    int pluginStatus(String id) {
        if (id == null) {
            Http.Response r = registry().get("/v1/plugins");
            expectOk(r, "list plugins");
            if (json) {
                out.println(r.raw());
                return 0;
            }
            Table table = new Table("ID", "PROVIDER", "CONTROLLERS HEALTHY/EXPECTED", "NODES HEALTHY/EXPECTED");
            for (JsonNode p : r.body()) {
                table.row(p.path("id").asText(), p.path("providerName").asText("-") + " "
                                + p.path("providerVersion").asText(""),
                        p.path("controllersHealthy").asInt() + "/" + p.path("controllersExpected").asInt(),
                        p.path("nodesHealthy").asInt() + "/" + p.path("nodesExpected").asInt());
            }
            out.print(table.size() == 0 ? "No plugins\n" : table.render());
            return 0;
        }
        checkId("plugin id", id);
        Http.Response r = registry().get("/v1/plugins/" + enc(id));
        if (r.status() == 404) {
            throw new Failure("plugin '" + id + "' unknown to plugin-registry-service at " + endpoints.registryUrl());
        }
        expectOk(r, "get plugin " + id);
        if (json) {
            out.println(r.body().toPrettyString());
            return 0;
        }
        JsonNode p = r.body();
        List<String[]> pairs = new ArrayList<>();
        pairs.add(new String[] {"id", p.path("id").asText()});
        pairs.add(new String[] {"provider", p.path("providerName").asText("-") + " " + p.path("providerVersion").asText("")});
        pairs.add(new String[] {"controllers", p.path("controllersHealthy").asInt() + "/" + p.path("controllersExpected").asInt()
                + " healthy"});
        pairs.add(new String[] {"nodes", p.path("nodesHealthy").asInt() + "/" + p.path("nodesExpected").asInt() + " healthy"});
        out.print(Table.keyValues(pairs));
        out.println();
        Table table = new Table("NODE", "TYPE", "HEALTHY", "DESCRIPTION", "LAST HEARTBEAT");
        for (JsonNode i : p.path("instances")) {
            table.row(i.path("nodeId").asText(), i.path("type").asText(), i.path("healthy").asBoolean() ? "yes" : "no",
                    i.path("healthDescription").asText("-"), i.path("lastHeartbeat").asText("-"));
        }
        out.print(table.size() == 0 ? "No instances\n" : table.render());
        return 0;
    }

    // ------------------------------------------------------------------ helpers

    private JsonNode volume(String id) {
        checkId("volume id", id);
        Http.Response r = claims().get(volumePath(id));
        if (r.status() == 404) {
            throw unknownVolume(id);
        }
        expectOk(r, "get volume " + id);
        return r.body();
    }

    private String volumePath(String id) {
        return "/v1/volumes/" + enc(namespace) + "/" + enc(id);
    }

    private Failure unknownVolume(String id) {
        return new Failure("volume '" + namespace + "/" + id + "' unknown to claim-service at " + endpoints.claimsUrl());
    }

    private static void expectOk(Http.Response r, String what) {
        if (!r.ok()) {
            throw new Failure(what + " failed (HTTP " + r.status() + "): " + r.error());
        }
    }

    private static void checkId(String what, String id) {
        PathSafeId.problem(id).ifPresent(problem -> {
            throw new Args.UsageException(what + " '" + id + "': " + problem);
        });
    }

    private <E extends Enum<E> & WireValue> E parse(Class<E> type, String option) {
        try {
            return WireValue.parse(type, args.required(option));
        } catch (IllegalArgumentException e) {
            throw new Args.UsageException("--" + option + ": " + e.getMessage());
        }
    }

    private static String text(JsonNode node, String... fields) {
        for (String f : fields) {
            if (node.hasNonNull(f)) {
                return node.get(f).asText();
            }
        }
        return "-";
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
