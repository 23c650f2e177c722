package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ArgsTest {

    @Test
    void positionalsOptionsAndNomadStyleFlags() {
        Args args = Args.parse("claim", "vol-1", "--alloc", "a1", "--node=n1", "-mode", "read", "-json");
        assertEquals(List.of("claim", "vol-1"), args.positionals());
        assertEquals("a1", args.required("alloc"));
        assertEquals("n1", args.required("node"));
        assertEquals("read", args.required("mode"));
        assertTrue(args.flag("json"));
        assertFalse(args.flag("force"));
    }

    /** An option given more than once keeps every value in order (--mount-flag); -w is a flag, not an option. */
    @Test
    void repeatedOptionsKeepEveryValueAndWIsAFlag() {
        Args args = Args.parse("claim", "v", "--mount-flag", "noatime", "--mount-flag=nodiratime", "-w", "x");
        assertEquals(List.of("noatime", "nodiratime"), args.options("mount-flag"));
        assertEquals(List.of(), args.options("trust-file"));
        assertTrue(args.flag("w"));
        assertEquals(List.of("claim", "v", "x"), args.positionals());
    }

    @Test
    void flagsTakeNoValue() {
        Args args = Args.parse("deregister", "v", "-force", "x");
        assertTrue(args.flag("force"));
        assertEquals(List.of("deregister", "v", "x"), args.positionals());
        assertThrows(Args.UsageException.class, () -> Args.parse("-force=maybe"));
    }

    @Test
    void missingValueAndUnknownOptionsAreUsageErrors() {
        Args.UsageException e = assertThrows(Args.UsageException.class, () -> Args.parse("claim", "--alloc"));
        assertEquals("--alloc needs a value", e.getMessage());
        Args args = Args.parse("status", "--bogus", "1");
        e = assertThrows(Args.UsageException.class, () -> args.only(Set.of()));
        assertEquals("unknown option -bogus", e.getMessage());
        e = assertThrows(Args.UsageException.class, () -> Args.parse("a", "b", "c").atMost(2));
        assertEquals("unexpected argument 'c'", e.getMessage());
        e = assertThrows(Args.UsageException.class, () -> Args.parse("x").required("node"));
        assertEquals("--node is required", e.getMessage());
    }

    @Test
    void globalOptionsAreAllowedEverywhere() {
        Args args = Args.parse("status", "--claims-url", "http://h:1", "--namespace", "ns", "-json");
        args.only(Set.of());
        assertEquals(Optional.of("http://h:1"), args.option("claims-url"));
    }

    @Test
    void doubleDashEndsOptions() {
        assertEquals(List.of("a", "-json"), Args.parse("a", "--", "-json").positionals());
    }
}
