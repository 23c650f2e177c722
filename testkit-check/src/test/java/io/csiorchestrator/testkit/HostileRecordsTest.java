package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The list of hostile records: at least 50 kinds, each different from the valid record it was made from. */
class HostileRecordsTest {

    static HostileRecords.Template template() {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("ce_id", "id-1");
        headers.put("ce_type", "io.example.thing.v1");
        headers.put("ce_source", "/test");
        headers.put("ce_specversion", "1.0");
        headers.put("ce_time", "2026-01-01T00:00:00Z");
        return new HostileRecords.Template("k", "{\"id\":\"a\",\"kind\":\"x\",\"at\":\"2026-01-01T00:00:00Z\"}", headers,
                "io.example.thing.v1", "io.example.other.v1", List.of("id", "kind", "at"), List.of("id"), List.of("kind"),
                List.of("at"), "{\"other\":1}");
    }

    @Test
    void atLeastFiftyKindsEachDifferingFromTheValidRecordInHeadersOrValue() {
        HostileRecords.Template t = template();
        List<HostileRecords.Kind> kinds = HostileRecords.of(t);
        assertTrue(kinds.size() >= 50, kinds.size() + " kinds");
        for (HostileRecords.Kind kind : kinds) {
            assertEquals(t.key(), kind.key(), kind.name());
            Map<String, String> headers = new LinkedHashMap<>();
            kind.headers().forEach(h -> headers.merge(h.key(), h.value() == null ? "(null)" : new String(h.value(), StandardCharsets.UTF_8),
                    (a, b) -> a + "|" + b));
            boolean sameHeaders = headers.equals(t.headers()) && kind.headers().size() == t.headers().size();
            assertFalse(sameHeaders && t.value().equals(kind.value()), "kind " + kind.name() + " is the valid record");
        }
    }
}
