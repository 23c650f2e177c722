package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The services' native heap trim ({@link Cluster#nativeHeapTrimmed}): only on a JDK that has the option. */
class NativeHeapTrimTest {

    private static final List<String> TRIMMED = List.of("-XX:TrimNativeHeapInterval=60000");

    @Test
    void jdksFrom17Point9OnTrimOnceAMinute() {
        assertEquals(TRIMMED, Cluster.nativeHeapTrimmed("17.0.9"));
        assertEquals(TRIMMED, Cluster.nativeHeapTrimmed("17.0.15+6-Debian-1deb12u1"));
        assertEquals(TRIMMED, Cluster.nativeHeapTrimmed("25.0.3+9-LTS"));
    }

    @Test
    void olderOrUnreadableVersionsGetNoOptionTheyWouldRefuse() {
        assertEquals(List.of(), Cluster.nativeHeapTrimmed("17.0.8"));
        assertEquals(List.of(), Cluster.nativeHeapTrimmed("17"));
        assertEquals(List.of(), Cluster.nativeHeapTrimmed("not a version"));
        assertEquals(List.of(), Cluster.nativeHeapTrimmed((String) null));
    }
}
