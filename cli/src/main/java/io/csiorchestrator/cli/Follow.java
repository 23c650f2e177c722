package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.VolumeState;
import io.csiorchestrator.events.VolumeStatus;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * The CLI's followers: {@code ./csi events} (claim-status and node-events as they come, a readable line per event or
 * one JSON object per line with {@code -json}) and {@code ./csi volume status -w} (the view printed again whenever it
 * changes, looked at again on each live event about it: {@link LiveChanges}). Both run until Ctrl-C, or for {@code --for DURATION} (e.g. {@code 30s}, {@code 2m}) when given.
 */
final class Follow {

    static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS").withZone(ZoneId.systemDefault());
    static final String HEADER = String.format("%-12s  %-12s  %-20s  %-24s  %-16s  %-10s  %s",
            "TIME", "TOPIC", "KIND", "VOLUME", "ALLOCATION", "NODE", "DETAIL");

    private Follow() {
    }

    /** {@code --for} as a deadline in nanoTime, or Long.MAX_VALUE without it. */
    static long deadline(Args args) {
        return args.option("for").map(d -> System.nanoTime() + parseDuration(d).toNanos()).orElse(Long.MAX_VALUE);
    }

    static Duration parseDuration(String text) {
        try {
            if (text.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(text.substring(0, text.length() - 2)));
            }
            long n = Long.parseLong(text.substring(0, text.length() - 1));
            return switch (text.charAt(text.length() - 1)) {
                case 's' -> Duration.ofSeconds(n);
                case 'm' -> Duration.ofMinutes(n);
                case 'h' -> Duration.ofHours(n);
                default -> Duration.ofSeconds(Long.parseLong(text));
            };
        } catch (RuntimeException e) {
            throw new Args.UsageException("--for takes a duration like 30s, 5m or 500ms, got '" + text + "'");
        }
    }

    /**
     * Tails claim-status, node-events and volume-status (the results of creates, deletes and expansions through the
     * services, issue 14) from their end until the deadline (or the thread is interrupted).
     */
    static int events(Endpoints endpoints, boolean json, long deadline, PrintStream out) {
        TopicCatalog topics = new TopicCatalog(endpoints.topicPrefix() == null ? "" : endpoints.topicPrefix());
        String claimStatus = topics.name(Topic.CLAIM_STATUS);
        String nodeEvents = topics.name(Topic.NODE_EVENTS);
        String volumeStatus = topics.name(Topic.VOLUME_STATUS);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                ClaimClient.consumerProps(endpoints.kafkaBootstrap(), "csi-cli-events"))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (String topic : List.of(claimStatus, nodeEvents, volumeStatus)) {
                List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(15));
                if (infos == null || infos.isEmpty()) {
                    throw new KafkaException("topic " + topic + " does not exist on " + endpoints.kafkaBootstrap());
                }
                infos.forEach(i -> partitions.add(new TopicPartition(i.topic(), i.partition())));
            }
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            partitions.forEach(p -> consumer.position(p, Duration.ofSeconds(15)));
            if (!json) {
                out.println(HEADER);
                out.flush();
            }
            while (System.nanoTime() < deadline && !Thread.currentThread().isInterrupted()) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(250))) {
                    String line = record.topic().equals(volumeStatus) ? volumeLine(record.value(), json)
                            : line(record.topic().equals(claimStatus), record.value(), json);
                    if (line != null) {
                        out.println(line);
                    }
                }
                out.flush();
            }
        } catch (org.apache.kafka.common.errors.InterruptException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /** One event as a line (a table row, or one JSON object); null for a record that is not a valid event. */
    static String line(boolean isClaimStatus, String value, boolean json) {
        try {
            if (isClaimStatus) {
                ClaimStatus s = EventCodec.decode(ClaimStatus.class, value);
                if (json) {
                    ObjectNode node = Http.MAPPER.createObjectNode();
                    node.put("topic", "claim-status");
                    node.setAll((ObjectNode) Http.MAPPER.valueToTree(s));
                    return node.toString();
                }
                return row(s.occurredAt(), "claim-status", s.state().wire(), s.namespace() + "/" + s.volumeId(),
                        s.allocationId(), s.nodeId(), s.reason() != null ? s.reason() : s.hostPath());
            }
            NodeEvent e = EventCodec.decode(NodeEvent.class, value);
            if (json) {
                ObjectNode node = Http.MAPPER.createObjectNode();
                node.put("topic", "node-events");
                node.setAll((ObjectNode) Http.MAPPER.valueToTree(e));
                return node.toString();
            }
            String detail = (e.pluginId() == null ? "" : "plugin " + e.pluginId() + ": ") + e.message()
                    + (e.error() == null ? "" : " (" + e.error() + ")");
            return row(e.occurredAt(), "node-events", e.kind().wire(),
                    e.volumeId() == null ? null : e.namespace() + "/" + e.volumeId(), e.allocationId(), e.nodeId(), detail);
        } catch (RuntimeException malformed) {
            return null;
        }
    }

    /**
     * A volume-status result as a line: its state, the volume, and the snapshot's id, the plugin's id or the reason
     * (a table row, or one JSON object); null for a record that is not a valid event.
     */
    static String volumeLine(String value, boolean json) {
        try {
            VolumeStatus s = EventCodec.decode(VolumeStatus.class, value);
            if (json) {
                ObjectNode node = Http.MAPPER.createObjectNode();
                node.put("topic", "volume-status");
                node.setAll((ObjectNode) Http.MAPPER.valueToTree(s));
                return node.toString();
            }
            String detail = (s.snapshotId() == null ? "" : "snapshot " + s.snapshotId() + ": ")
                    + (s.reason() != null && s.state().failed() ? s.reason()
                    : s.state() == VolumeState.EXPANDED ? s.capacityBytes() + " bytes: " + s.reason()
                    : s.externalId() != null ? "plugin id " + s.externalId() : s.reason());
            return row(s.occurredAt(), "volume-status", s.state().wire(), s.namespace() + "/" + s.volumeId(), null, null,
                    detail);
        } catch (RuntimeException malformed) {
            return null;
        }
    }

    static String row(Instant at, String topic, String kind, String volume, String alloc, String node, String detail) {
        return String.format("%-12s  %-12s  %-20s  %-24s  %-16s  %-10s  %s", at == null ? "-" : TIME.format(at), topic, kind,
                dash(volume), dash(alloc), dash(node), dash(detail));
    }

    private static String dash(String s) {
        return s == null || s.isBlank() ? "-" : s;
    }

    /**
     * Prints {@code view} now and again whenever what it returns changes, until the deadline (or an interrupt); each
     * print headed by the time. It looks again when {@code changes} signals (a live event about what it shows), at
     * the latest every {@code safety} while the live stream is open (an event lost in a reconnect), and every
     * {@code interval} while it is not.
     */
    static int watch(Supplier<String> view, LiveChanges changes, Duration interval, Duration safety, long deadline,
                     PrintStream out) {
        String last = null;
        while (System.nanoTime() < deadline && !Thread.currentThread().isInterrupted()) {
            String now = view.get();
            if (!now.equals(last)) {
                out.println("== " + TIME.format(Instant.now()) + (last == null ? "" : " (changed)"));
                out.print(now);
                out.flush();
                last = now;
            }
            long wait = Math.min((changes.live() ? safety : interval).toNanos(), deadline - System.nanoTime());
            try {
                changes.await(Math.max(1, wait));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return 0;
    }
}
