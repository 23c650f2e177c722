package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintStream;

/**
 * The "Volume usage" part of {@code ./csi volume status <ns>/<id>} (issue 34): the usage each claiming node's worker
 * last reported (the REST detail's {@code usage}), bytes in binary units, inodes as counts; "-" where the plugin does
 * not report a figure.
 */
final class VolumeUsageTable {

    private VolumeUsageTable() {
    }

    static void print(PrintStream out, JsonNode usage) {
        out.println();
        out.println("Volume usage");
        if (!usage.isArray() || usage.isEmpty()) {
            out.println("No volume usage reported");
            return;
        }
        Table table = new Table("NODE", "USED", "AVAILABLE", "CAPACITY", "INODES USED", "INODES FREE", "INODES", "SEEN");
        for (JsonNode u : usage) {
            table.row(u.path("nodeId").asText(), bytes(u.path("usedBytes")), bytes(u.path("availableBytes")),
                    bytes(u.path("capacityBytes")), count(u.path("inodesUsed")), count(u.path("inodesFree")),
                    count(u.path("inodes")), u.path("observedAt").asText("-"));
        }
        out.print(table.render());
    }

    /** 1536 → "1.5 KiB"; under 1 KiB in bytes; "-" when absent. */
    static String bytes(JsonNode value) {
        if (!value.isNumber()) {
            return "-";
        }
        double n = value.asDouble();
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        int i = 0;
        while (n >= 1024 && i < units.length - 1) {
            n /= 1024;
            i++;
        }
        return i == 0 ? value.asLong() + " B" : String.format(java.util.Locale.ROOT, "%.1f %s", n, units[i]);
    }

    private static String count(JsonNode value) {
        return value.isNumber() ? Long.toString(value.asLong()) : "-";
    }
}
