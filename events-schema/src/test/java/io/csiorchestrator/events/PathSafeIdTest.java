package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class PathSafeIdTest {

    @ParameterizedTest
    @ValueSource(strings = {"..", "../x", "x/..", "a..b", "/etc", "a/b", "a\\b", ".", ".hidden", "-rf", "_x",
            "with space", "tab\there", "new\nline", "nul\0byte", "ünï", "$(rm)", "a;b", "%2e%2e", "~root", ""})
    void rejectsHostileIds(String id) {
        assertFalse(PathSafeId.isValid(id), id);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PathSafeId.require("volume id", id));
        assertTrue(e.getMessage().startsWith("invalid volume id '"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "the message must escape control characters");
    }

    @ParameterizedTest
    @ValueSource(strings = {"vol-1", "a", "7f3e9a1c-0d4b-4c1e-9a6b-2f5c8d7e1a0b", "mysql.data_0", "Node-01.example.com"})
    void acceptsOrdinaryIds(String id) {
        assertTrue(PathSafeId.isValid(id), id);
        assertEquals(id, PathSafeId.require("id", id));
    }

    @Test
    void boundsTheLength() {
        assertTrue(PathSafeId.isValid("a".repeat(PathSafeId.MAX_LENGTH)));
        String tooLong = "a".repeat(PathSafeId.MAX_LENGTH + 1);
        assertEquals("must be at most 128 characters (has 129)", PathSafeId.problem(tooLong).orElseThrow());
    }

    @Test
    void nullIsRequired() {
        assertEquals("is required", PathSafeId.problem(null).orElseThrow());
    }
}
