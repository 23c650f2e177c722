package io.csiorchestrator.hostpath;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.util.logging.Logger;

/**
 * The node's volume limit (NodeGetInfo max_volumes_per_node, and the RESOURCE_EXHAUSTED checks of
 * ControllerPublishVolume and NodeStageVolume/NodePublishVolume): the number in {@link PluginOptions#maxVolumesFile()}
 * when that file exists, else {@code --max-volumes-per-node}. Read again on every call, so that a test (or an operator)
 * changes the limit of a running plugin, as a storage provider's limit changes under Kubernetes' KEP-4876. A file that
 * does not hold a number >= 0 is logged and the flag's value used.
 */
final class MaxVolumes {

    private static final Logger LOG = Logger.getLogger(MaxVolumes.class.getName());

    private MaxVolumes() {
    }

    /** The limit now; 0 means no limit. */
    static long current(PluginOptions options) {
        // asked first, because the file is usually absent: that costs a system call, not an exception
        if (!Files.exists(options.maxVolumesFile())) {
            return options.maxVolumesPerNode();
        }
        String text;
        try {
            text = Files.readString(options.maxVolumesFile(), StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            return options.maxVolumesPerNode();
        } catch (IOException e) {
            LOG.warning("cannot read " + options.maxVolumesFile() + " (" + e.getMessage() + "); using --max-volumes-per-node "
                    + options.maxVolumesPerNode());
            return options.maxVolumesPerNode();
        }
        try {
            long value = Long.parseLong(text);
            if (value >= 0) {
                return value;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        LOG.warning(options.maxVolumesFile() + " holds '" + (text.length() > 40 ? text.substring(0, 40) + "..." : text)
                + "', not a number >= 0; using --max-volumes-per-node " + options.maxVolumesPerNode());
        return options.maxVolumesPerNode();
    }
}
