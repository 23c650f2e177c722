package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiSocketChannels;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The plugin's command line.
 *
 * @param socketPath            from {@code --endpoint unix:///path/csi.sock}
 * @param nodeId                {@code --node-id}: this node's id
 * @param stateDir              {@code --state-dir}: volumes, state, faults and call log
 * @param pluginName            {@code --plugin-name}, default {@value #DEFAULT_PLUGIN_NAME}
 * @param stageUnstage          {@code --stage-unstage=true|false}: advertise STAGE_UNSTAGE_VOLUME (default true)
 * @param controllerPublish     {@code --controller-publish=true|false}: advertise PUBLISH_UNPUBLISH_VOLUME (default true)
 * @param maxVolumesPerNode     {@code --max-volumes-per-node N} (or env {@value #MAX_VOLUMES_ENV}): 0 for no limit (default);
 *                              a number in {@link #maxVolumesFile()} overrides it while the plugin runs ({@link MaxVolumes})
 * @param unmountStagingOnExit  {@code --unmount-staging-on-exit}: unmount staging mounts when the plugin exits
 * @param knownNodeIds          {@code --known-node-ids a,b}: nodes ControllerPublishVolume accepts, besides this one
 * @param faultsFile            {@code --faults-file F}, default {@code <state-dir>/faults}
 * @param faultRules            {@code --fault RULE} (repeatable): rules added to the faults file at start
 * @param sharedDir             {@code --shared-dir D} or null: the volumes and the controller state, shared by every
 *                              process of this plugin (as a storage backend is), so that a ControllerPublish answered
 *                              by one node's plugin is known to another's NodeStage
 * @param fenceOnControllerUnpublish {@code --fence-on-controller-unpublish} (or env
 *                              {@value #FENCE_ENV}{@code =true}): a ControllerUnpublishVolume(vol, X) fences vol from
 *                              node X (storage-level fencing, see {@code FenceKeeper}) until a ControllerPublishVolume(vol, X)
 * @param fenceAckTimeout       {@code --fence-ack-timeout}: how long a fencing ControllerUnpublishVolume waits for node
 *                              X's plugin to confirm the fence (default 5 s; never past the call's own deadline)
 * @param offlineExpansion      {@code --volume-expansion=offline}: advertise the VolumeExpansion type OFFLINE instead of
 *                              ONLINE (the default), and refuse ControllerExpandVolume of a volume that is published
 *                              (controller publication, staging or node publication known to this process) with
 *                              FAILED_PRECONDITION, as an offline-only plugin does
 * @param topology              {@code --topology key=value} (repeatable): accessible topology segments NodeGetInfo reports
 *                              besides {@code topology.hostpath.csi.csiorchestrator.io/node=<node id>}, e.g. a zone
 * @param singleNodeMultiWriter {@code --single-node-multi-writer=true|false}: advertise the SINGLE_NODE_MULTI_WRITER
 *                              controller and node capabilities and take the CSI 1.5 modes SINGLE_NODE_SINGLE_WRITER and
 *                              SINGLE_NODE_MULTI_WRITER (default true; false plays a plugin older than CSI 1.5)
 */
public record PluginOptions(
        Path socketPath,
        String nodeId,
        Path stateDir,
        String pluginName,
        boolean stageUnstage,
        boolean controllerPublish,
        long maxVolumesPerNode,
        boolean unmountStagingOnExit,
        Set<String> knownNodeIds,
        Path faultsFile,
        List<String> faultRules,
        Path sharedDir,
        boolean fenceOnControllerUnpublish,
        Duration fenceAckTimeout,
        boolean offlineExpansion,
        Map<String, String> topology,
        boolean singleNodeMultiWriter) {

    /** The environment variable that sets {@code --max-volumes-per-node} (the flag wins when both are given). */
    public static final String MAX_VOLUMES_ENV = "CSI_HOSTPATH_MAX_VOLUMES_PER_NODE";
    /** The file in the state directory whose number, when present, is the limit NodeGetInfo reports ({@link MaxVolumes}). */
    public static final String MAX_VOLUMES_FILE_NAME = "max-volumes-per-node";

    /** The environment variable that turns {@code --fence-on-controller-unpublish} on ({@code true}). */
    public static final String FENCE_ENV = "CSI_HOSTPATH_FENCE_ON_CONTROLLER_UNPUBLISH";
    public static final Duration DEFAULT_FENCE_ACK_TIMEOUT = Duration.ofSeconds(5);
    public static final String DEFAULT_PLUGIN_NAME = "hostpath.csi.csiorchestrator.io";
    public static final String FAULTS_FILE_NAME = "faults";

    public static final String USAGE = """
            usage: java -jar csi-hostpath-plugin.jar --endpoint unix:///path/csi.sock --node-id N --state-dir D [options]
              --stage-unstage=true|false       advertise STAGE_UNSTAGE_VOLUME (default true)
              --controller-publish=true|false  advertise PUBLISH_UNPUBLISH_VOLUME (default true)
              --max-volumes-per-node N         volumes per node, 0 for no limit (default 0; env %s); a number in
                                               <state-dir>/max-volumes-per-node overrides it, re-read on every call
              --topology key=value             an accessible topology segment of this node besides its node id
                                               (repeatable), e.g. --topology zone=a
              --single-node-multi-writer=true|false  advertise SINGLE_NODE_MULTI_WRITER (default true)
              --unmount-staging-on-exit        unmount the staging mounts when the plugin exits
              --known-node-ids a,b             other node ids ControllerPublishVolume accepts
              --plugin-name NAME               GetPluginInfo name (default hostpath.csi.csiorchestrator.io)
              --faults-file F                  fault rules, re-read on every call (default <state-dir>/faults)
              --fault RULE                     add a fault rule at start, e.g. --fault "NodePublishVolume UNAVAILABLE 2"
              --shared-dir D                   volumes and controller state shared by this plugin's processes on
                                               every node (D/volumes, D/controller-state.json,
                                               D/controller-publications.json; file-locked)
              --fence-on-controller-unpublish  storage fence: ControllerUnpublishVolume(vol, X) refuses X's
                                               NodeStage/NodePublish of vol and makes X's mounts of it read-only,
                                               until ControllerPublishVolume(vol, X) (env %s=true)
              --fence-ack-timeout 5s           how long ControllerUnpublishVolume waits for X's plugin to confirm
              --volume-expansion=online|offline  the VolumeExpansion type advertised (default online); offline:
                                               ControllerExpandVolume of a published volume is FAILED_PRECONDITION
            """.formatted(MAX_VOLUMES_ENV, FENCE_ENV);

    public PluginOptions {
        knownNodeIds = Set.copyOf(knownNodeIds);
        faultRules = List.copyOf(faultRules);
        topology = Map.copyOf(topology);
    }

    /** Where a test or an operator writes a new limit while the plugin runs: {@code <state-dir>/max-volumes-per-node}. */
    public Path maxVolumesFile() {
        return stateDir.resolve(MAX_VOLUMES_FILE_NAME);
    }

    /** Node ids that ControllerPublishVolume accepts: this node and the known ones. */
    public boolean knowsNode(String id) {
        return nodeId.equals(id) || knownNodeIds.contains(id);
    }

    /** Parses {@code --name value} and {@code --name=value} arguments, and {@value #FENCE_ENV} from the environment. */
    public static PluginOptions parse(String... args) {
        return parse(System.getenv(), args);
    }

    /** Parses the arguments; {@code env} may turn on the fence ({@value #FENCE_ENV}{@code =true}). */
    public static PluginOptions parse(Map<String, String> env, String... args) {
        Path socket = null;
        String nodeId = null;
        Path stateDir = null;
        Path sharedDir = null;
        String pluginName = DEFAULT_PLUGIN_NAME;
        boolean stageUnstage = true;
        boolean controllerPublish = true;
        long maxVolumes = env.containsKey(MAX_VOLUMES_ENV)
                ? nonNegative("max-volumes-per-node (" + MAX_VOLUMES_ENV + ")", env.get(MAX_VOLUMES_ENV).strip()) : 0;
        Map<String, String> topology = new java.util.LinkedHashMap<>();
        boolean singleNodeMultiWriter = true;
        boolean unmountStagingOnExit = false;
        boolean fence = env.containsKey(FENCE_ENV) && bool("fence-on-controller-unpublish (" + FENCE_ENV + ")",
                env.get(FENCE_ENV).strip());
        Duration fenceAckTimeout = DEFAULT_FENCE_ACK_TIMEOUT;
        boolean offlineExpansion = false;
        Set<String> knownNodes = new LinkedHashSet<>();
        Path faultsFile = null;
        List<String> faultRules = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "'");
            }
            int equals = arg.indexOf('=');
            String name = equals < 0 ? arg.substring(2) : arg.substring(2, equals);
            String inline = equals < 0 ? null : arg.substring(equals + 1);
            switch (name) {
                case "unmount-staging-on-exit" -> unmountStagingOnExit = inline == null || bool(name, inline);
                case "fence-on-controller-unpublish" -> fence = inline == null || bool(name, inline);
                case "stage-unstage", "controller-publish", "single-node-multi-writer" -> {
                    String value = inline;
                    if (value == null) {
                        value = i + 1 < args.length && !args[i + 1].startsWith("--") ? args[++i] : "true";
                    }
                    if (name.equals("stage-unstage")) {
                        stageUnstage = bool(name, value);
                    } else if (name.equals("single-node-multi-writer")) {
                        singleNodeMultiWriter = bool(name, value);
                    } else {
                        controllerPublish = bool(name, value);
                    }
                }
                default -> {
                    String value = inline;
                    if (value == null) {
                        if (i + 1 >= args.length) {
                            throw new IllegalArgumentException("--" + name + " needs a value");
                        }
                        value = args[++i];
                    }
                    switch (name) {
                        case "endpoint" -> socket = CsiSocketChannels.socketPathOf(value);
                        case "node-id" -> nodeId = id(name, value);
                        case "state-dir" -> stateDir = absolute(name, value);
                        case "plugin-name" -> pluginName = value;
                        case "max-volumes-per-node" -> maxVolumes = nonNegative(name, value);
                        case "known-node-ids" -> {
                            for (String id : value.split(",")) {
                                if (!id.isBlank()) {
                                    knownNodes.add(id(name, id.strip()));
                                }
                            }
                        }
                        case "faults-file" -> faultsFile = absolute(name, value);
                        case "shared-dir" -> sharedDir = absolute(name, value);
                        case "fault" -> faultRules.add(value);
                        case "topology" -> {
                            int eq = value.indexOf('=');
                            if (eq <= 0 || eq == value.length() - 1) {
                                throw new IllegalArgumentException("--topology takes key=value, got '" + value + "'");
                            }
                            String key = value.substring(0, eq);
                            if (key.equals(ControllerService.TOPOLOGY_KEY)) {
                                throw new IllegalArgumentException("--topology " + key + " is the node id's own segment");
                            }
                            topology.put(key, value.substring(eq + 1));
                        }
                        case "fence-ack-timeout" -> fenceAckTimeout = duration(name, value);
                        case "volume-expansion" -> offlineExpansion = switch (value) {
                            case "online" -> false;
                            case "offline" -> true;
                            default -> throw new IllegalArgumentException("--volume-expansion takes online or offline, got '"
                                    + value + "'");
                        };
                        default -> throw new IllegalArgumentException("unknown option --" + name);
                    }
                }
            }
        }
        if (socket == null || nodeId == null || stateDir == null) {
            throw new IllegalArgumentException("--endpoint, --node-id and --state-dir are required");
        }
        if (pluginName.isBlank() || pluginName.length() > 63) {
            throw new IllegalArgumentException("--plugin-name must have 1 to 63 characters");
        }
        if (fence && !controllerPublish) {
            throw new IllegalArgumentException("--fence-on-controller-unpublish needs --controller-publish=true"
                    + " (the fence is set by ControllerUnpublishVolume)");
        }
        return new PluginOptions(socket, nodeId, stateDir, pluginName, stageUnstage, controllerPublish, maxVolumes,
                unmountStagingOnExit, knownNodes, faultsFile == null ? stateDir.resolve(FAULTS_FILE_NAME) : faultsFile,
                faultRules, sharedDir, fence, fenceAckTimeout, offlineExpansion, topology, singleNodeMultiWriter);
    }

    /** Where the volume directories are: {@code <shared-dir>/volumes} or {@code <state-dir>/volumes}. */
    public Path volumesParent() {
        return sharedDir == null ? stateDir : sharedDir;
    }

    private static boolean bool(String name, String value) {
        return switch (value) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("--" + name + " takes true or false, got '" + value + "'");
        };
    }

    private static String id(String name, String value) {
        RequestChecks.idProblem(value).ifPresent(problem -> {
            throw new IllegalArgumentException("--" + name + " " + problem);
        });
        if (value.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " may not be empty");
        }
        return value;
    }

    private static Path absolute(String name, String value) {
        Path path = Path.of(value);
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException("--" + name + " must be an absolute path, got '" + value + "'");
        }
        return path.normalize();
    }

    private static Duration duration(String name, String value) {
        try {
            Duration duration;
            if (value.endsWith("ms")) {
                duration = Duration.ofMillis(Long.parseLong(value.substring(0, value.length() - 2)));
            } else if (value.endsWith("s")) {
                duration = Duration.ofSeconds(Long.parseLong(value.substring(0, value.length() - 1)));
            } else {
                throw new NumberFormatException();
            }
            if (duration.isNegative() || duration.isZero()) {
                throw new NumberFormatException();
            }
            return duration;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " takes a positive duration such as 5s or 500ms, got '"
                    + value + "'");
        }
    }

    private static long nonNegative(String name, String value) {
        try {
            long number = Long.parseLong(value);
            if (number < 0) {
                throw new NumberFormatException();
            }
            return number;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " takes a number >= 0, got '" + value + "'");
        }
    }
}
