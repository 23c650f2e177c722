package io.csiorchestrator.claims.status;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.csiorchestrator.events.PluginStatus;
import java.time.Instant;

/**
 * One line of the status page's live feed. It carries only these fields, copied from the event: never a
 * secret, a mount flag or an event's free-form details.
 *
 * @param topic  {@code claim-status}, {@code node-events} or {@code plugin-status}
 * @param kind   the claim state ({@code ready}, ...), the node event kind, or {@code plugin}
 * @param volume {@code namespace/id} when the event is about a volume
 * @param text   the event's reason, message or error, or the plugin's health counts
 * @param status for plugin-status: the plugin's status as received (it holds no secret), so the page shows it at
 *               once, whether or not this instance's database has it yet
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record FeedEntry(long seq, String topic, String kind, Instant at, String volume, String allocation,
                        String node, String plugin, String text, PluginStatus status) {

    FeedEntry withSeq(long n) {
        return new FeedEntry(n, topic, kind, at, volume, allocation, node, plugin, text, status);
    }
}
