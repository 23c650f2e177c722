package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.csiorchestrator.hostpath.mount.Mounter;
import io.csiorchestrator.hostpath.state.StateStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static io.csiorchestrator.hostpath.PluginFixture.WAIT;
import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A measurement, not a test of time (issue 36 item 6): the CPU the hostpath plugin process spends per claim-and-release
 * cycle (ControllerPublish, NodeStage, NodePublish, NodeUnpublish, NodeUnstage, ControllerUnpublish) over its real unix
 * socket, with real bind mounts, run as {@code ./csi up} runs it ({@code --shared-dir}, {@code --known-node-ids}, C1,
 * serial GC), with other bind mounts present as on a loaded node. It prints figures and asserts only that the calls
 * did what they say (the mounts are there after NodePublish and gone after NodeUnstage). Not run by {@code verify}
 * (the name does not end in IT); run it with
 * <pre>
 * ./mvnw -B -o -pl csi-hostpath-plugin -am verify -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dit.test=PluginCpuCost -Dfailsafe.failIfNoSpecifiedTests=false
 * </pre>
 * System properties (with {@code -D} on that command): {@code csi.cost.cycles} (300, measured, after
 * {@code csi.cost.warmup-cycles}, 100), {@code csi.cost.batch} (50 volumes go through each call in turn),
 * {@code csi.cost.volumes} (100 created), {@code csi.cost.held} (20 staged and published throughout, as claims held
 * meanwhile), {@code csi.cost.other-mounts} (150 unrelated bind mounts), {@code csi.cost.jfr} (a .jfr file: record
 * the plugin's measured part with JFR), {@code csi.cost.jar} (another build's runnable jar, to compare two builds in
 * one sitting), {@code csi.cost.jvm-options} (more options for the plugin's JVM, after ./csi up's, e.g.
 * {@code -XX:TieredStopAtLevel=4} for the full JIT). Figures go to standard output and {@code target/plugin-cpu-cost.txt}.
 */
class PluginCpuCost {

    private static final List<String> CALLS = List.of("ControllerPublishVolume", "NodeStageVolume",
            "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume");

    @TempDir
    Path dir;

    private HostpathPluginProcess plugin;
    private CsiPluginClient client;

    @AfterEach
    void tearDown() throws IOException {
        PluginFixture.tearDown(plugin, client, dir);
    }

    @Test
    void cpuPerCycle() throws Exception {
        int cycles = Integer.getInteger("csi.cost.cycles", 300);
        int warmup = Integer.getInteger("csi.cost.warmup-cycles", 100);
        int batch = Integer.getInteger("csi.cost.batch", 50);
        int volumeCount = Integer.getInteger("csi.cost.volumes", 100);
        int held = Integer.getInteger("csi.cost.held", 20);
        int otherMounts = Integer.getInteger("csi.cost.other-mounts", 150);
        String jfr = System.getProperty("csi.cost.jfr", "");
        String jar = System.getProperty("csi.cost.jar", "");
        String jvmOptions = System.getProperty("csi.cost.jvm-options", "");
        if (held + batch > volumeCount || cycles % batch != 0 || warmup % batch != 0) {
            throw new IllegalArgumentException("csi.cost: held " + held + " + batch " + batch + " must be <= volumes "
                    + volumeCount + ", and cycles " + cycles + " and warmup-cycles " + warmup + " multiples of the batch");
        }

        Mounter mounter = new Mounter(MountTable::readSelf);
        Path otherSource = Files.createDirectories(dir.resolve("other-source"));
        for (int i = 0; i < otherMounts; i++) {
            mounter.bind(otherSource, Files.createDirectories(dir.resolve("other/" + i)), false);
        }

        HostpathPluginProcess.Builder builder = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1",
                dir.resolve("state"));
        if (!jar.isEmpty()) {
            builder.jar(Path.of(jar));
        }
        plugin = builder
                .jvmOptions("-Xmx192m", "-Xms32m") // as ./csi up starts it (cli Cluster.java)
                .jvmOptions(jvmOptions.isBlank() ? new String[0] : jvmOptions.trim().split("\\s+"))
                .args("--known-node-ids", "n1,n2", "--shared-dir", dir.resolve("shared").toString())
                .start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());

        List<String> volumes = new ArrayList<>();
        for (int i = 0; i < volumeCount; i++) {
            volumes.add(client.createVolume(CreateVolumeRequest.newBuilder().setName(String.format("cost-%03d", i))
                    .addVolumeCapabilities(WRITER).build()).await().atMost(WAIT).getVolume().getVolumeId());
        }
        for (String volume : volumes.subList(0, held)) {
            for (String call : CALLS.subList(0, 3)) {
                call(call, volume);
            }
        }
        List<String> cycling = volumes.subList(held, held + batch);

        for (int done = 0; done < warmup; done += batch) {
            round(cycling, null);
        }
        Map<String, long[]> totals = new LinkedHashMap<>(); // call -> {ticks, schedstat ns, wall ns}
        CALLS.forEach(call -> totals.put(call, new long[3]));
        if (!jfr.isEmpty()) {
            jcmd("JFR.start", "name=cost", "settings=profile", "jdk.ExecutionSample#period=1ms"); // the measured part only; JFR's own cost is in the figures
        }
        Map<String, long[]> threadsAtStart = threadTicks(plugin.pid());
        long[] start = cpuTicksSplit(plugin.pid());
        int mountsSeen = 0;
        for (int done = 0; done < cycles; done += batch) {
            mountsSeen = Math.max(mountsSeen, round(cycling, totals));
        }
        long[] end = cpuTicksSplit(plugin.pid());
        Map<String, long[]> threadsAtEnd = threadTicks(plugin.pid());
        // the floor: as many calls that touch no state, file or mount (NodeGetCapabilities: the socket, gRPC, the
        // interceptor's fault-file read, call log and log line), measured after the cycles
        long floorTicks = cpuTicks(plugin.pid());
        for (int i = 0; i < cycles * CALLS.size(); i++) {
            client.nodeGetCapabilities().await().atMost(WAIT);
        }
        floorTicks = cpuTicks(plugin.pid()) - floorTicks;
        if (!jfr.isEmpty()) {
            jcmd("JFR.stop", "name=cost", "filename=" + Path.of(jfr).toAbsolutePath());
        }

        double tickMs = 1000.0 / clockTicksPerSecond();
        StringBuilder out = new StringBuilder(String.format("hostpath plugin CPU per claim-and-release cycle:"
                        + " %d cycles (after %d warm-up), %d volumes (%d held staged and published), %d other bind"
                        + " mounts, mount table up to %d lines, --shared-dir; state files %s%s%n",
                cycles, warmup, volumeCount, held, otherMounts, mountsSeen, stateFileSizes(),
                jfr.isEmpty() ? "" : "; recorded with JFR (its cost included) to " + jfr));
        out.append(String.format("%-28s %14s %18s %14s%n", "call", "CPU ms/call", "(thread schedstat)", "wall ms/call"));
        long[] sum = new long[3];
        totals.forEach((call, t) -> {
            out.append(String.format("%-28s %14.2f %18.2f %14.2f%n", call, t[0] * tickMs / cycles,
                    t[1] / 1e6 / cycles, t[2] / 1e6 / cycles));
            for (int i = 0; i < 3; i++) {
                sum[i] += t[i];
            }
        });
        out.append(String.format("%-28s %14.2f %18.2f %14.2f%n", "cycle (sum)", sum[0] * tickMs / cycles,
                sum[1] / 1e6 / cycles, sum[2] / 1e6 / cycles));
        out.append(String.format("cycle, whole measured span (/proc/<pid>/stat utime+stime+cutime+cstime): %.2f ms"
                        + " (user %.2f, system %.2f)%n", (end[0] + end[1] - start[0] - start[1]) * tickMs / cycles,
                (end[0] - start[0]) * tickMs / cycles, (end[1] - start[1]) * tickMs / cycles));
        out.append(String.format("floor: %d NodeGetCapabilities calls (no state, file or mount): %.2f ms per call,"
                + " %.2f ms per %d calls%n", cycles * CALLS.size(), floorTicks * tickMs / cycles / CALLS.size(),
                floorTicks * tickMs / cycles, CALLS.size()));
        out.append("by thread (live at both ends; ms per cycle, user + system):");
        threadsAtEnd.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), new long[] {
                        e.getValue()[0] - threadsAtStart.getOrDefault(e.getKey(), new long[2])[0],
                        e.getValue()[1] - threadsAtStart.getOrDefault(e.getKey(), new long[2])[1]}))
                .filter(e -> e.getValue()[0] + e.getValue()[1] > 0)
                .sorted((a, b) -> Long.compare(b.getValue()[0] + b.getValue()[1], a.getValue()[0] + a.getValue()[1]))
                .forEach(e -> out.append(String.format(" %s %.2f + %.2f;", e.getKey(), e.getValue()[0] * tickMs / cycles,
                        e.getValue()[1] * tickMs / cycles)));
        out.append(System.lineSeparator());
        System.out.print(out);
        Files.writeString(Path.of("target/plugin-cpu-cost.txt"), out);
    }

    /** Each call in turn for every volume of the batch; adds its costs to totals (unless null). The mount table's size. */
    private int round(List<String> batch, Map<String, long[]> totals) throws IOException {
        int mountLines = 0;
        for (String call : CALLS) {
            long ticks = cpuTicks(plugin.pid());
            long sched = threadNanos(plugin.pid());
            long wall = System.nanoTime();
            for (String volume : batch) {
                call(call, volume);
            }
            if (totals != null) {
                long[] t = totals.get(call);
                t[2] += System.nanoTime() - wall;
                t[1] += threadNanos(plugin.pid()) - sched;
                t[0] += cpuTicks(plugin.pid()) - ticks;
            }
            MountTable table = MountTable.readSelf();
            mountLines = Math.max(mountLines, table.mounts().size());
            for (String volume : batch) {
                Optional<MountInfo> target = table.mountAt(target(volume));
                boolean mounted = call.equals("NodePublishVolume");
                if (mounted || call.equals("NodeUnstageVolume")) {
                    assertEquals(mounted, target.isPresent(), call + " " + volume + ": " + target);
                    assertEquals(mounted, table.isMountPoint(staging(volume)), call + " " + volume);
                }
                if (mounted) {
                    assertTrue(target.get().root().endsWith("/volumes/" + volume), target.get().toString());
                }
            }
        }
        return mountLines;
    }

    private void call(String call, String volume) {
        String staging = staging(volume).toString();
        String target = target(volume).toString();
        switch (call) {
            case "ControllerPublishVolume" -> client.controllerPublish(ControllerPublishVolumeRequest.newBuilder()
                    .setVolumeId(volume).setNodeId("n1").setVolumeCapability(WRITER).build()).await().atMost(WAIT);
            case "NodeStageVolume" -> client.nodeStage(NodeStageVolumeRequest.newBuilder().setVolumeId(volume)
                    .setStagingTargetPath(staging).setVolumeCapability(WRITER).build()).await().atMost(WAIT);
            case "NodePublishVolume" -> client.nodePublish(NodePublishVolumeRequest.newBuilder().setVolumeId(volume)
                    .setStagingTargetPath(staging).setTargetPath(target).setVolumeCapability(WRITER).build())
                    .await().atMost(WAIT);
            case "NodeUnpublishVolume" -> client.nodeUnpublish(NodeUnpublishVolumeRequest.newBuilder()
                    .setVolumeId(volume).setTargetPath(target).build()).await().atMost(WAIT);
            case "NodeUnstageVolume" -> client.nodeUnstage(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume)
                    .setStagingTargetPath(staging).build()).await().atMost(WAIT);
            case "ControllerUnpublishVolume" -> client.controllerUnpublish(ControllerUnpublishVolumeRequest
                    .newBuilder().setVolumeId(volume).setNodeId("n1").build()).await().atMost(WAIT);
            default -> throw new IllegalArgumentException(call);
        }
    }

    private Path staging(String volume) {
        return dir.resolve("staging").resolve(volume);
    }

    private Path target(String volume) {
        return dir.resolve("targets").resolve(volume).resolve("data");
    }

    private String stateFileSizes() throws IOException {
        Path state = dir.resolve("state").resolve(StateStore.FILE_NAME);
        Path shared = dir.resolve("shared").resolve(StateStore.SHARED_FILE_NAME);
        Path publications = dir.resolve("shared").resolve(StateStore.SHARED_PUBLICATIONS_FILE_NAME);
        return state.getFileName() + " " + Files.size(state) + " B, " + shared.getFileName() + " " + Files.size(shared)
                + " B" + (Files.exists(publications) ? ", " + publications.getFileName() + " " + Files.size(publications) + " B" : "") + (System.getProperty("csi.cost.jar", "").isEmpty() ? "" : "; jar " + System.getProperty("csi.cost.jar"))
                + (System.getProperty("csi.cost.jvm-options", "").isBlank() ? ""
                : "; JVM options " + System.getProperty("csi.cost.jvm-options"));
    }

    /** utime + stime + cutime + cstime of the process, in clock ticks (proc(5)). */
    static long cpuTicks(long pid) throws IOException {
        long[] split = cpuTicksSplit(pid);
        return split[0] + split[1];
    }

    /** {utime + cutime, stime + cstime} of the process, in clock ticks. */
    static long[] cpuTicksSplit(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"), StandardCharsets.US_ASCII);
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" "); // fields[0] is field 3, state
        return new long[] {Long.parseLong(fields[11]) + Long.parseLong(fields[13]),
                Long.parseLong(fields[12]) + Long.parseLong(fields[14])};
    }

    /** Per live thread ({@code <name>/<tid>}): {utime, stime} in clock ticks. */
    static Map<String, long[]> threadTicks(long pid) throws IOException {
        Map<String, long[]> ticks = new LinkedHashMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    String stat = Files.readString(task.resolve("stat"), StandardCharsets.US_ASCII);
                    String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    ticks.put(name + "/" + task.getFileName(),
                            new long[] {Long.parseLong(fields[11]), Long.parseLong(fields[12])});
                } catch (NoSuchFileException e) {
                    // the thread ended meanwhile
                }
            }
        }
        return ticks;
    }

    /** The time on CPU of the process's live threads, in ns ({@code /proc/<pid>/task/<tid>/schedstat}). */
    static long threadNanos(long pid) throws IOException {
        long sum = 0;
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    sum += Long.parseLong(Files.readString(task.resolve("schedstat")).split(" ")[0]);
                } catch (NoSuchFileException e) {
                    // the thread ended meanwhile
                }
            }
        }
        return sum;
    }

    private void jcmd(String... command) throws IOException, InterruptedException {
        List<String> line = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                Long.toString(plugin.pid())));
        line.addAll(List.of(command));
        Process jcmd = new ProcessBuilder(line).redirectErrorStream(true).start();
        String output = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, jcmd.waitFor(), String.join(" ", line) + ": " + output);
    }

    private static long clockTicksPerSecond() throws IOException, InterruptedException {
        Process getconf = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
        String text = new String(getconf.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).strip();
        getconf.waitFor();
        return Long.parseLong(text);
    }
}
