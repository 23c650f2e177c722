package io.csiorchestrator.claims.messaging;

import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.Violation;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.ReplayWindow;
import io.csiorchestrator.support.security.RecordAuthenticity;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * The checks of one claim-requested record, in the order events-schema/CONTRACT.md section 8 describes (issue 33):
 * CloudEvents headers; the body and its key ({@code key mismatch}); the signature over the raw value by a scheduler's
 * key; the replay window. A record that is not a known scheduler's (unsigned, forged, the checks off) or a replay fails
 * here (dead-lettered only); a known scheduler's that is refused otherwise (outside the window, a broken body, a key
 * mismatch) comes back with its refusal, to be answered ({@link RefusedClaimRequests}) and dead-lettered.
 */
final class ClaimRequestChecks {

    /** A valid request (refused null), or a known scheduler's refused request (request may be null). */
    record Checked(ClaimRequested request, MalformedEventException refused) {
    }

    private ClaimRequestChecks() {
    }

    static Checked check(ConsumerRecord<String, String> record, byte[] raw, RecordAuthenticity authenticity) {
        CloudEventHeaders.requireValid(record.headers(), EventType.CLAIM_REQUESTED);
        String name = EventType.CLAIM_REQUESTED.displayName();
        ClaimRequested request = null;
        MalformedEventException broken = null;
        try {
            request = decode(record);
            requireKey(name, record, "volumeId", request.volumeId());
        } catch (MalformedEventException e) {
            broken = e;
        }
        Principal scheduler;
        try {
            scheduler = authenticity.requireSchedulerSignature(record, raw, name);
        } catch (MalformedEventException unsigned) {
            // not a known scheduler's: dead-lettered only; a broken body's reason names its fields first
            throw broken != null ? broken : unsigned;
        }
        if (scheduler == null && broken != null) {
            throw broken; // signatures not checked (csi.security.verify-records=false): nobody known to answer
        }
        RecordAuthenticity.Freshness freshness = authenticity.freshness(record, name);
        if (freshness.verdict() == ReplayWindow.Verdict.REPLAYED) {
            throw freshness.refusal(); // a replay: the first record's answer stands, no second one
        }
        return new Checked(request, freshness.fresh() ? broken : freshness.refusal());
    }

    /**
     * The request in {@code record}; a value {@link ClaimRequestedDeserializer} withheld whole fails with its reason
     * (decoding the replacement would only list missing fields).
     */
    private static ClaimRequested decode(ConsumerRecord<String, String> record) {
        Header withheld = record.headers().lastHeader(ClaimRequestedDeserializer.WITHHELD);
        if (withheld != null) {
            throw new MalformedEventException(EventType.CLAIM_REQUESTED.displayName(), List.of(new Violation("(record)",
                    Violation.REDACTED, new String(withheld.value(), StandardCharsets.UTF_8))));
        }
        return EventCodec.decode(ClaimRequested.class, record.value());
    }

    /** Fails with {@code key mismatch} unless the record's key is {@code bodyValue}, the body's {@code field}. */
    static void requireKey(String eventName, ConsumerRecord<String, String> record, String field, String bodyValue) {
        if (!bodyValue.equals(record.key())) {
            throw MalformedEventException.single(eventName, field, bodyValue,
                    "key mismatch: the record key " + (record.key() == null ? "(none)" : "'" + record.key() + "'")
                            + " is not the body's " + field);
        }
    }
}
