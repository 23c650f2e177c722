package io.csiorchestrator.cli;

import io.csiorchestrator.events.NodeEventKind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The checks of issue 19's fencing faults ({@code ./csi chaos} faults {@code partition-node-1*},
 * {@code freeze-worker-node-1}, {@code detach-live-node-2}), over what one run of a fault recorded. Pure: no I/O,
 * every time in epoch milliseconds of this one machine's clock (the mount-table samples of this process and the
 * node events' {@code occurredAt}, written by the workers on the same machine).
 */
public final class FenceCheck {

    private FenceCheck() {
    }

    /**
     * The fencing timers the system was started with (names and defaults of the design: {@code CSI_FENCING_*},
     * claim-service's {@code CSI_CLAIMS_COMMAND_TIMEOUT}) and the slack the liveness bound adds.
     */
    public record Timers(Duration leaseTtl, double clockDrift, Duration budget, Duration margin,
                         Duration commandTimeout, Duration slack) {

        /** From an environment (the services' own: the CLI's environment overlaid by the cluster's extra one). */
        public static Timers of(Map<String, String> env, Duration slack) {
            return new Timers(duration(env.getOrDefault("CSI_FENCING_LEASE_TTL", "30s")),
                    Double.parseDouble(env.getOrDefault("CSI_FENCING_CLOCK_DRIFT", "0.05")),
                    duration(env.getOrDefault("CSI_FENCING_BUDGET", "10s")),
                    duration(env.getOrDefault("CSI_FENCING_MARGIN", "5s")),
                    duration(env.getOrDefault("CSI_CLAIMS_COMMAND_TIMEOUT", "2m")), slack);
        }

        /** The design's floor: lease-ttl x (1 + clock-drift) + budget + margin. */
        public long floorMillis() {
            return Math.round(leaseTtl.toMillis() * (1 + clockDrift)) + budget.toMillis() + margin.toMillis();
        }

        /**
         * How long after the fault a claim on the other node may take at most: the floor, one command timeout (the
         * unmount command to the cut-off node, which the release waits out before it looks at the lease), the
         * slack.
         */
        public long boundMillis() {
            return floorMillis() + commandTimeout.toMillis() + slack.toMillis();
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "floor %.1f s = lease-ttl %s x %.2f + budget %s + margin %s; bound %.1f s"
                            + " = floor + command-timeout %s + slack %s", floorMillis() / 1000.0, human(leaseTtl),
                    1 + clockDrift, human(budget), human(margin), boundMillis() / 1000.0, human(commandTimeout),
                    human(slack));
        }

        private static String human(Duration d) {
            return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
        }
    }

    /** {@code 30s}, {@code 500ms}, {@code 2m}, {@code 1h}, or an ISO-8601 duration ({@code PT30S}). */
    public static Duration duration(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.startsWith("pt") || t.startsWith("p")) {
            return Duration.parse(text.trim().toUpperCase(Locale.ROOT));
        }
        if (t.endsWith("ms")) {
            return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
        }
        long n = Long.parseLong(t.substring(0, t.length() - 1));
        return switch (t.charAt(t.length() - 1)) {
            case 's' -> Duration.ofSeconds(n);
            case 'm' -> Duration.ofMinutes(n);
            case 'h' -> Duration.ofHours(n);
            default -> Duration.ofSeconds(Long.parseLong(t));
        };
    }

    /** A change of the writable publish targets of the run's volume on a node, seen in the mount table at {@code at}. */
    public record MountSample(long at, String node, List<String> writable) {
    }

    /**
     * One failover run: a writer on {@code oldNode}, the fault at {@code faultStart} (where the liveness bound counts
     * from: the cut or SIGSTOP; with a claim-service restart in the fault, its being ready again, since it treats
     * every lease as just granted then), the scheduler's release, a claim
     * on {@code newNode} retried until it was answered ready at {@code newReadyAt} (-1: never), the heal (or SIGCONT)
     * at {@code healAt}, then watched until {@code watchedUntil}.
     *
     * @param samples every change of writable targets of the volume per node, from before the fault to the end
     * @param events  the node events about the volume (any node), with their {@code occurredAt}
     */
    public record FenceRun(String fault, String volume, String oldNode, String newNode, long faultStart,
                           long newReadyAt, long healAt, long watchedUntil, long boundMillis,
                           List<MountSample> samples, List<ChaosCheck.NodeEv> events) {
    }

    /** The violations of one failover run, each named for the fault. */
    public static List<ChaosCheck.Violation> check(FenceRun run) {
        List<ChaosCheck.Violation> out = new ArrayList<>();
        String f = run.fault();

        // 1. The sampled mount table: never a writable target of the volume on both nodes in one sample.
        List<MountSample> samples = new ArrayList<>(run.samples());
        samples.sort(Comparator.comparingLong(MountSample::at));
        Map<String, List<String>> now = new HashMap<>();
        long overlapFrom = -1;
        String overlapDetail = null;
        for (MountSample s : samples) {
            now.put(s.node(), s.writable());
            boolean both = !now.getOrDefault(run.oldNode(), List.of()).isEmpty()
                    && !now.getOrDefault(run.newNode(), List.of()).isEmpty();
            if (both && overlapFrom < 0) {
                overlapFrom = s.at();
                overlapDetail = run.oldNode() + " " + now.get(run.oldNode()) + " and " + run.newNode() + " "
                        + now.get(run.newNode());
            } else if (!both && overlapFrom >= 0) {
                out.add(new ChaosCheck.Violation(f, "two-writers-sampled", "volume " + run.volume()
                        + " writable on two nodes in the mount table from " + t(overlapFrom) + " to " + t(s.at()) + " ("
                        + (s.at() - overlapFrom) + " ms): " + overlapDetail));
                overlapFrom = -1;
            }
        }
        if (overlapFrom >= 0) {
            out.add(new ChaosCheck.Violation(f, "two-writers-sampled", "volume " + run.volume()
                    + " writable on two nodes in the mount table from " + t(overlapFrom) + " to the end of the run: "
                    + overlapDetail));
        }

        // 2. The node events: the new node's writable publish never while the old node's is in place.
        List<ChaosCheck.NodeEv> events = new ArrayList<>(run.events());
        events.sort(Comparator.comparingLong(ChaosCheck.NodeEv::at));
        Map<String, Set<String>> mounted = new TreeMap<>();
        for (ChaosCheck.NodeEv e : events) {
            if (!e.success() || !run.volume().equals(e.volume()) || e.alloc() == null) {
                continue;
            }
            Set<String> allocs = mounted.computeIfAbsent(e.node(), k -> new LinkedHashSet<>());
            if (e.kind() == NodeEventKind.MOUNT) {
                allocs.add(e.alloc());
                if (!mounted.getOrDefault(run.oldNode(), Set.of()).isEmpty()
                        && !mounted.getOrDefault(run.newNode(), Set.of()).isEmpty()) {
                    out.add(new ChaosCheck.Violation(f, "writable-publish-overlap", "volume " + run.volume()
                            + ": " + e.node() + " mounted " + e.alloc() + " at " + t(e.at()) + " while " + mounted
                            + " (node events)"));
                }
            } else if (e.kind() == NodeEventKind.UNMOUNT || e.kind() == NodeEventKind.FENCED) {
                allocs.remove(e.alloc());
            }
        }

        // 3. Liveness: the new node's claim ready within the bound after the fault.
        if (run.newReadyAt() < 0) {
            out.add(new ChaosCheck.Violation(f, "failover-not-ready", "no claim of " + run.volume() + " on "
                    + run.newNode() + " answered ready (bound " + run.boundMillis() + " ms after the fault)"));
        } else if (run.newReadyAt() - run.faultStart() > run.boundMillis()) {
            out.add(new ChaosCheck.Violation(f, "failover-too-slow", run.newNode() + "'s claim of " + run.volume()
                    + " ready " + (run.newReadyAt() - run.faultStart()) + " ms after the fault, bound "
                    + run.boundMillis() + " ms"));
        }

        // 4. After the heal: the old node acts on nothing of its old epoch and has no mount of the volume left.
        for (ChaosCheck.NodeEv e : events) {
            if (e.success() && e.kind() == NodeEventKind.MOUNT && e.node().equals(run.oldNode())
                    && run.volume().equals(e.volume()) && e.at() >= run.healAt()) {
                out.add(new ChaosCheck.Violation(f, "stale-node-acted", run.oldNode() + " mounted " + e.alloc()
                        + " of " + run.volume() + " at " + t(e.at()) + ", after the heal at " + t(run.healAt())
                        + ": no claim for it was made after the fault"));
            }
        }
        List<String> before = List.of();
        List<String> last = List.of();
        for (MountSample s : samples) {
            if (!s.node().equals(run.oldNode())) {
                continue;
            }
            if (s.at() >= run.healAt() && !s.writable().isEmpty()
                    && !new LinkedHashSet<>(before).containsAll(s.writable())) {
                out.add(new ChaosCheck.Violation(f, "stale-node-acted", run.oldNode() + " mounted " + s.writable()
                        + " at " + t(s.at()) + ", after the heal at " + t(run.healAt()) + " (mount table)"));
            }
            before = s.writable();
            last = s.writable();
        }
        if (!last.isEmpty()) {
            out.add(new ChaosCheck.Violation(f, "stale-mount-after-heal", run.oldNode() + " still has " + last
                    + " of " + run.volume() + " mounted at " + t(run.watchedUntil()) + ", "
                    + (run.watchedUntil() - run.healAt()) + " ms after the heal"));
        }
        return out;
    }

    private static String t(long epochMillis) {
        return java.time.Instant.ofEpochMilli(epochMillis).toString();
    }

    /**
     * The operator's detach of a claim on a live node: the claim must be freed only once the node has unmounted.
     *
     * @param freedAt            when claim-service first no longer held the claim (-1: never, within the watch)
     * @param mountedWhenFreed   the volume's writable targets on the node read from the mount table right after the
     *                           REST answer that showed the claim freed (empty: unmounted before it was freed)
     */
    public record DetachRun(String fault, String volume, String node, long detachAt, long freedAt,
                            List<String> mountedWhenFreed, int detachStatus) {
    }

    public static List<ChaosCheck.Violation> check(DetachRun run) {
        List<ChaosCheck.Violation> out = new ArrayList<>();
        if (run.detachStatus() < 200 || run.detachStatus() >= 300) {
            out.add(new ChaosCheck.Violation(run.fault(), "detach-refused", "POST detach?node=" + run.node()
                    + " of " + run.volume() + " answered " + run.detachStatus()));
        }
        if (run.freedAt() >= 0 && !run.mountedWhenFreed().isEmpty()) {
            out.add(new ChaosCheck.Violation(run.fault(), "freed-while-mounted", "claim-service freed the claim of "
                    + run.volume() + " on the live " + run.node() + " at " + t(run.freedAt()) + " ("
                    + (run.freedAt() - run.detachAt()) + " ms after the detach) while " + run.mountedWhenFreed()
                    + " was still mounted there"));
        }
        if (run.freedAt() < 0) {
            out.add(new ChaosCheck.Violation(run.fault(), "detach-not-done", "the claim of " + run.volume() + " on "
                    + run.node() + " was never freed after the detach"));
        }
        return out;
    }

    /** A {@code node-leases} record as the suite read it: node, epoch, state (valid, lapsed, fenced), the registry's time. */
    public record LeaseEv(String node, long epoch, String state, long at) {
    }

    /**
     * A kill -9 of one of two plugin-registry-service replicas, dead at {@code killAt}, while the workers of
     * {@code nodes} held leases; the survivor takes its lease partitions over; the killed one started again at
     * {@code restartAt} (a second rebalance) and the leases watched until {@code watchedUntil} (past restart + ttl x
     * (1 + drift)).
     *
     * @param leases   every node-leases record read (any time)
     * @param events   every node event read (for FENCED ones)
     * @param answers  every claim-status answer read (for a claim failed by a fence)
     */
    public record RegistryRestart(String fault, List<String> nodes, long killAt, long restartAt, long watchedUntil,
                                  Timers timers, List<LeaseEv> leases, List<ChaosCheck.NodeEv> events,
                                  List<ChaosCheck.Answer> answers) {
    }

    /**
     * The checks of a registry replica's kill (issue 19): the survivor takes the killed one's nodes over and counts
     * their persisted leases as granted then, so (1) no lapse is declared before the kill + ttl x (1 + drift)
     * ({@code lapse-before-floor}) and, the workers being alive and renewing, none at all while watched
     * ({@code lease-lapsed}); (2) each node is renewed by the survivor between the kill and the restart
     * ({@code not-taken-over}), again after the restart ({@code renewals-not-resumed}), and every grant from the kill
     * to the end of the watch has the epoch it held before the kill ({@code epoch-changed}); (3) no claim failed over:
     * no FENCED node event and no claim failed for a fence in the window ({@code failed-over}).
     */
    public static List<ChaosCheck.Violation> check(RegistryRestart run) {
        List<ChaosCheck.Violation> out = new ArrayList<>();
        String f = run.fault();
        long floorAt = run.killAt() + Math.round(run.timers().leaseTtl().toMillis() * (1 + run.timers().clockDrift()));
        for (LeaseEv l : run.leases()) {
            if (l.at() < run.killAt() || l.at() > run.watchedUntil() || l.state().equals("valid")) {
                continue;
            }
            if (l.at() < floorAt) {
                out.add(new ChaosCheck.Violation(f, "lapse-before-floor", l.node() + "'s lease epoch " + l.epoch()
                        + " declared " + l.state() + " at " + t(l.at()) + ", before the kill at " + t(run.killAt())
                        + " + ttl x (1 + drift) = " + t(floorAt)));
            } else {
                out.add(new ChaosCheck.Violation(f, "lease-lapsed", l.node() + "'s lease epoch " + l.epoch() + " declared "
                        + l.state() + " at " + t(l.at()) + " although its worker kept asking for renewals"));
            }
        }
        for (String node : run.nodes()) {
            long before = -1;
            long takenOver = -1;
            long resumed = -1;
            LeaseEv changed = null;
            for (LeaseEv l : run.leases()) {
                if (!l.node().equals(node) || !l.state().equals("valid")) {
                    continue;
                }
                if (l.at() < run.killAt()) {
                    before = l.epoch(); // the last grant before the kill
                    continue;
                }
                if (l.at() > run.watchedUntil()) {
                    continue;
                }
                if (l.at() < run.restartAt() && takenOver < 0) {
                    takenOver = l.at(); // the survivor's first grant
                } else if (l.at() >= run.restartAt() && resumed < 0) {
                    resumed = l.at(); // the first grant after the killed one's restart
                }
                if (changed == null && before >= 0 && l.epoch() != before) {
                    changed = l;
                }
            }
            if (before < 0) {
                out.add(new ChaosCheck.Violation(f, "no-lease-before", node + " held no lease before the kill at "
                        + t(run.killAt())));
                continue;
            }
            if (takenOver < 0) {
                out.add(new ChaosCheck.Violation(f, "not-taken-over", node + "'s lease was not renewed between the kill"
                        + " at " + t(run.killAt()) + " and the restart at " + t(run.restartAt())
                        + ": the survivor did not take it over"));
            }
            if (resumed < 0) {
                out.add(new ChaosCheck.Violation(f, "renewals-not-resumed", node + "'s lease was not renewed after the"
                        + " restart at " + t(run.restartAt()) + " (watched until " + t(run.watchedUntil()) + ")"));
            }
            if (changed != null) {
                out.add(new ChaosCheck.Violation(f, "epoch-changed", node + " held epoch " + before + " before the kill"
                        + " and was granted epoch " + changed.epoch() + " at " + t(changed.at())));
            }
        }
        for (ChaosCheck.NodeEv e : run.events()) {
            if (e.kind() == NodeEventKind.FENCED && e.at() >= run.killAt() && e.at() <= run.watchedUntil()) {
                out.add(new ChaosCheck.Violation(f, "failed-over", e.node() + " reported FENCED at " + t(e.at())
                        + " during the registry's restart"));
            }
        }
        for (ChaosCheck.Answer a : run.answers()) {
            if (a.at() >= run.killAt() && a.at() <= run.watchedUntil() && a.reason() != null
                    && a.reason().contains("fenced")) {
                out.add(new ChaosCheck.Violation(f, "failed-over", "claim " + a.requestId() + " answered " + a.state()
                        + " at " + t(a.at()) + ": " + a.reason()));
            }
        }
        return out;
    }
}
