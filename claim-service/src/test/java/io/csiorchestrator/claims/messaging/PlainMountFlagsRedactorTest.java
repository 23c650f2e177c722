package io.csiorchestrator.claims.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class PlainMountFlagsRedactorTest {

    @Test
    void plainFlagsAreBlankedKeepingTheirCountAndEverythingElse() {
        String in = "{\"requestId\":\"r1\",\"volumeId\":\"v1\",\"mountOptions\":{\"fsType\":\"ext4\","
                + "\"mountFlags\":[\"noatime\",\"password=s3cret\"]},\"mode\":\"write\"}";
        String out = PlainMountFlagsRedactor.redact(in);
        assertFalse(out.contains("s3cret") || out.contains("noatime"), out);
        assertEquals("{\"requestId\":\"r1\",\"volumeId\":\"v1\",\"mountOptions\":{\"fsType\":\"ext4\","
                + "\"mountFlags\":[\"(redacted)\",\"(redacted)\"]},\"mode\":\"write\"}", out);
    }

    @Test
    void valuesWithoutPlainFlagsPassUnchanged() {
        String none = "{\"requestId\":\"r1\",\"mountOptions\":{\"fsType\":\"ext4\"}}";
        assertSame(none, PlainMountFlagsRedactor.redact(none));
        String empty = "{\"requestId\":\"r1\",\"mountOptions\":{\"mountFlags\":[]}}";
        assertSame(empty, PlainMountFlagsRedactor.redact(empty));
        String sealed = "{\"requestId\":\"r1\",\"sealedMountFlags\":{\"keyId\":\"k\"}}";
        assertSame(sealed, PlainMountFlagsRedactor.redact(sealed));
    }

    @Test
    void whatIsNotJsonPassesUnchangedForTheHandlerToDeadLetter() {
        String broken = "{\"mountOptions\":{\"mountFlags\":[\"password=s3cret\"";
        assertSame(broken, PlainMountFlagsRedactor.redact(broken));
        assertTrue(PlainMountFlagsRedactor.redact(null) == null);
        String wrongShape = "{\"mountOptions\":{\"mountFlags\":\"password=s3cret\"}}";
        assertSame(wrongShape, PlainMountFlagsRedactor.redact(wrongShape));
    }
}
