package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class TableTest {

    @Test
    void columnsArePaddedToTheWidestCell() {
        String table = new Table("ID", "NODE", "STATE")
                .row("vol-1", "node-1", "ready")
                .row("a-much-longer-id", null, "released")
                .render();
        assertEquals("""
                ID                NODE    STATE
                vol-1             node-1  ready
                a-much-longer-id  -       released
                """, table);
    }

    @Test
    void wrongCellCountIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new Table("A", "B").row("only one"));
    }

    @Test
    void keyValuesAlignTheEqualsSigns() {
        assertEquals("id        = v\nnamespace = -\n",
                Table.keyValues(List.of(new String[] {"id", "v"}, new String[] {"namespace", null})));
    }
}
