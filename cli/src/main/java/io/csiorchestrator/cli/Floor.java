package io.csiorchestrator.cli;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The least a claim (or a release) can take on this system: its Kafka hops times one measured Kafka hop, plus
 * its PostgreSQL commits times one measured commit, plus the plugin's time in its CSI calls.
 *
 * <p>The hops and commits, counted from the code path (claim-service's ClaimService/ClaimMachine and outbox
 * relay, node-mount-worker's command handling). With the controller instance on the claiming node (every node of
 * {@code ./csi up} runs the hostpath plugin's controller; issue 36 item 1) the controller calls run inside the node's
 * one mount and one unmount command: 4 Kafka hops and 2 commits each, like a plugin without controller publish, with
 * the controller calls' time in the plugin's part. With the controller on another node, the two-step path:
 * <pre>
 * claim:   scheduler --claim-requested--> claim-service [commit 1: claim + outbox row]
 *          --node-commands controller-publish--> worker (ControllerPublishVolume) --mount-done-->
 *          claim-service [commit 2] --node-commands mount--> worker (NodeStageVolume, NodePublishVolume)
 *          --mount-done--> claim-service [commit 3: ready + outbox row] --claim-status ready--> scheduler
 *          = 6 Kafka hops, 3 commits
 * release: scheduler --claim-requested (release)--> claim-service [commit 1] --node-commands unmount-->
 *          worker (NodeUnpublishVolume, NodeUnstageVolume) --mount-done--> claim-service [commit 2]
 *          --node-commands controller-unpublish--> worker (ControllerUnpublishVolume) --mount-done-->
 *          claim-service [commit 3: released] --claim-status released--> scheduler
 *          = 6 Kafka hops, 3 commits
 * </pre>
 * Without controller publish, or with the controller on the claiming node, the controller round drops out:
 * 4 hops and 2 commits each. Not counted: the outbox relay's SELECT of the committed rows before it
 * publishes (a read, no commit) and its UPDATE marking them published (after the broker's ack, off the
 * answer's path).
 */
final class Floor {

    static final int HOPS_WITH_CONTROLLER = 6;
    static final int COMMITS_WITH_CONTROLLER = 3;
    static final int HOPS_NODE_ONLY = 4;
    static final int COMMITS_NODE_ONLY = 2;

    static final List<String> CLAIM_RPCS = List.of("ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume");
    static final List<String> RELEASE_RPCS = List.of("NodeUnpublishVolume", "NodeUnstageVolume",
            "ControllerUnpublishVolume");

    private Floor() {
    }

    /** One operation's floor (ms) and how it was made up. */
    record Estimate(int hops, double kafkaHopMs, int commits, double commitMs, double pluginMs,
                    Map<String, Double> rpcMeanMs) {
        double totalMs() {
            return hops * kafkaHopMs + commits * commitMs + pluginMs;
        }

        String formula() {
            return String.format(java.util.Locale.ROOT, "%d x %.2f ms (Kafka hop) + %d x %.2f ms (commit) + %.2f ms"
                    + " (plugin) = %.1f ms", hops, kafkaHopMs, commits, commitMs, pluginMs, totalMs());
        }
    }

    /**
     * The floor of an operation whose CSI calls are {@code rpcs}, from the mean time per call of each RPC over
     * the run ({@code rpcMeanMs}; an RPC not called in the run adds nothing). {@code withController}: whether
     * the controller publish is a round of its own (a controller on another node; the hop and commit counts above).
     */
    static Estimate of(List<String> rpcs, Map<String, Double> rpcMeanMs, double kafkaHopMs, double commitMs,
                       boolean withController) {
        Map<String, Double> used = new LinkedHashMap<>();
        double plugin = 0;
        for (String rpc : rpcs) {
            Double mean = rpcMeanMs.get(rpc);
            if (mean != null) {
                used.put(rpc, mean);
                plugin += mean;
            }
        }
        return new Estimate(withController ? HOPS_WITH_CONTROLLER : HOPS_NODE_ONLY, kafkaHopMs,
                withController ? COMMITS_WITH_CONTROLLER : COMMITS_NODE_ONLY, commitMs, plugin, used);
    }

    /** P50 over the floor; NaN if the floor is not positive. */
    static double ratio(double p50Ms, Estimate floor) {
        double total = floor.totalMs();
        return total > 0 ? p50Ms / total : Double.NaN;
    }
}
