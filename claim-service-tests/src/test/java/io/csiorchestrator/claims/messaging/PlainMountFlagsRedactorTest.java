package io.csiorchestrator.claims.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class PlainMountFlagsRedactorTest {

    @Test
    void plainFlagsAreBlankedKeepingTheirCountAndEverythingElse() {
        String in = "{\"requestId\":\"r1\",\"volumeId\":\"v1\",\"mountOptions\":{\"fsType\":\"ext4\","
                + "\"mountFlags\":[\"noatime\",\"password=s3cret\"]},\"mode\":\"write\"}";
        PlainMountFlagsRedactor.Redacted out = PlainMountFlagsRedactor.redact(in);
        assertFalse(out.value().contains("s3cret") || out.value().contains("noatime"), out.value());
        assertEquals("{\"requestId\":\"r1\",\"volumeId\":\"v1\",\"mountOptions\":{\"fsType\":\"ext4\","
                + "\"mountFlags\":[\"(redacted)\",\"(redacted)\"]},\"mode\":\"write\"}", out.value());
        assertNull(out.withheld(), "a JSON object is blanked, not withheld");
    }

    @Test
    void valuesWithoutPlainFlagsPassUnchanged() {
        String none = "{\"requestId\":\"r1\",\"mountOptions\":{\"fsType\":\"ext4\"}}";
        assertSame(none, PlainMountFlagsRedactor.redact(none).value());
        String empty = "{\"requestId\":\"r1\",\"mountOptions\":{\"mountFlags\":[]}}";
        assertSame(empty, PlainMountFlagsRedactor.redact(empty).value());
        String absent = "{\"requestId\":\"r1\",\"mountOptions\":{\"mountFlags\":null}}";
        assertSame(absent, PlainMountFlagsRedactor.redact(absent).value());
        String sealed = "{\"requestId\":\"r1\",\"sealedMountFlags\":{\"keyId\":\"k\"}}";
        assertSame(sealed, PlainMountFlagsRedactor.redact(sealed).value());
        assertNull(PlainMountFlagsRedactor.redact(null).value());
        assertNull(PlainMountFlagsRedactor.redact(sealed).withheld());
    }

    /** A JSON object of the wrong shape: whatever is named like mount flags, anywhere, is blanked; the rest stays. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        // flags as one string instead of a list
        "{\"mountOptions\":{\"mountFlags\":\"password=s3cret\"}}"
                + "|{\"mountOptions\":{\"mountFlags\":\"(redacted)\"}}",
        // flags that are not strings keep their count
        "{\"mountOptions\":{\"mountFlags\":[{\"password\":\"s3cret\"},42]}}"
                + "|{\"mountOptions\":{\"mountFlags\":[\"(redacted)\",\"(redacted)\"]}}",
        // at the top level, in other spellings, nested in a list
        "{\"mountFlags\":[\"password=s3cret\"],\"x\":[{\"Mount_Flags\":[\"s3cret\"]}],\"mount-flags\":\"s3cret\"}"
                + "|{\"mountFlags\":[\"(redacted)\"],\"x\":[{\"Mount_Flags\":[\"(redacted)\"]}],\"mount-flags\":\"(redacted)\"}",
        // the options as a string (double-encoded): not an object, so blanked whole
        "{\"requestId\":\"r1\",\"mountOptions\":\"{\\\"mountFlags\\\":[\\\"password=s3cret\\\"]}\"}"
                + "|{\"requestId\":\"r1\",\"mountOptions\":\"(redacted)\"}",
        // the field name spelled with a JSON escape
        "{\"mountOptions\":{\"mount\\u0046lags\":[\"password=s3cret\"]}}"
                + "|{\"mountOptions\":{\"mountFlags\":[\"(redacted)\"]}}",
    })
    void wrongShapesAreBlankedWhereverFlagsCouldBe(String in, String expected) {
        PlainMountFlagsRedactor.Redacted out = PlainMountFlagsRedactor.redact(in);
        assertEquals(expected, out.value());
        assertNull(out.withheld());
    }

    /**
     * What is not a JSON object (text that does not parse, a truncated record, a bare string or list)
     * cannot be told apart into flags and the rest: it is withheld whole. The dead letter then carries
     * why, the length and the SHA-256 of the original (to find it on claim-requested), never its text,
     * not even in the parse error (Jackson's own message would quote the token: 'password').
     */
    @ParameterizedTest
    @ValueSource(strings = {
        "{\"mountOptions\":{\"mountFlags\":[\"password=s3cret\"",
        "{\"mountOptions\":{\"mountFlags\":[password=s3cret]}}",
        "mountFlags: [password=s3cret]",
        "\"mountFlags=password=s3cret\"",
        "[\"password=s3cret\"]",
        // an object followed by more text, and a duplicate key whose first value would be lost in a tree
        "{\"requestId\":\"r1\"} {\"mountFlags\":[\"password=s3cret\"]}",
        "{\"mountOptions\":{\"mountFlags\":[\"password=s3cret\"]},\"mountOptions\":{}}",
    })
    void whatIsNotAJsonObjectIsWithheldWithItsLengthHashAndWhy(String in) throws Exception {
        PlainMountFlagsRedactor.Redacted out = PlainMountFlagsRedactor.redact(in);
        assertFalse(out.value().contains("s3cret") || out.value().contains("password"), out.value());
        assertTrue(out.withheld() != null && !out.withheld().contains("s3cret") && !out.withheld().contains("password"),
                String.valueOf(out.withheld()));
        JsonNode withheld = new ObjectMapper().readTree(out.value());
        assertEquals(out.withheld(), withheld.get("withheld").asText());
        byte[] bytes = in.getBytes(StandardCharsets.UTF_8);
        assertEquals(bytes.length, withheld.get("length").asInt());
        assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)),
                withheld.get("sha256").asText());
    }

    @Test
    void theWithheldReasonSaysWhereTheTextStopsBeingJson() {
        String truncated = PlainMountFlagsRedactor.redact("{\"mountOptions\":{\"mountFlags\":[\"password=s3cret\"").withheld();
        assertTrue(truncated.contains("not valid JSON") && truncated.contains("line 1, column"), truncated);
        String bareList = PlainMountFlagsRedactor.redact("[\"password=s3cret\"]").withheld();
        assertTrue(bareList.contains("not a JSON object"), bareList);
    }
}
