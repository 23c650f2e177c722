package io.csiorchestrator.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.worker.state.VolumeRecord;
import io.quarkus.runtime.annotations.RegisterForReflection;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Every worker class Jackson meets in the stored records (the volume records and the fence record) is registered for
 * reflection, and nothing else.
 */
class NativeReflectionTest {

    @Test
    void everyWorkerClassOfTheStoredRecordIsRegistered() {
        Set<String> reachable = new TreeSet<>();
        walk(VolumeRecord.class, reachable);
        walk(io.csiorchestrator.worker.state.FenceRecord.class, reachable);
        Set<String> registered = Arrays.stream(NativeReflection.class.getAnnotation(RegisterForReflection.class).targets())
                .map(Class::getName).collect(Collectors.toCollection(TreeSet::new));
        assertTrue(reachable.size() >= 4, "the walk found the record's classes: " + reachable);
        assertEquals(reachable, registered, "NativeReflection must list exactly the worker classes of the records");
    }

    /** Collects the io.csiorchestrator.worker classes reachable through record components and type arguments. */
    private static void walk(Type type, Set<String> seen) {
        if (type instanceof ParameterizedType p) {
            walk(p.getRawType(), seen);
            for (Type argument : p.getActualTypeArguments()) {
                walk(argument, seen);
            }
            return;
        }
        if (!(type instanceof Class<?> c) || !c.getName().startsWith("io.csiorchestrator.worker.")) {
            return;
        }
        if (!seen.add(c.getName())) {
            return;
        }
        if (c.isRecord()) {
            for (RecordComponent component : c.getRecordComponents()) {
                walk(component.getGenericType(), seen);
            }
        }
    }
}
