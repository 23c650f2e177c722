package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.api.VolumeResource;
import io.quarkus.runtime.annotations.RegisterForReflection;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Every record the REST API (de)serializes (volumes and the status page), and every claim-service record inside them, is registered for reflection. */
class NativeReflectionTest {

    @Test
    void everyRestBodyIsRegistered() {
        RegisterForReflection annotation = NativeReflection.class.getAnnotation(RegisterForReflection.class);
        assertNotNull(annotation);
        Set<Class<?>> registered = Set.of(annotation.targets());

        Set<Class<?>> needed = new LinkedHashSet<>();
        Deque<Class<?>> todo = new ArrayDeque<>();
        for (Class<?> resource : List.of(VolumeResource.class, io.csiorchestrator.claims.status.StatusResource.class)) {
            for (Class<?> nested : resource.getDeclaredClasses()) {
                if (nested.isRecord()) {
                    todo.add(nested);
                }
            }
        }
        todo.add(io.csiorchestrator.claims.status.FeedEntry.class);
        while (!todo.isEmpty()) {
            Class<?> c = todo.poll();
            if (!c.getName().startsWith("io.csiorchestrator.claims.") || !needed.add(c)) {
                continue;
            }
            for (RecordComponent component : c.getRecordComponents()) {
                collect(component.getGenericType(), todo);
            }
        }
        assertTrue(needed.size() >= 8, "found the REST records: " + needed);
        for (Class<?> c : needed) {
            assertTrue(registered.contains(c), c.getName() + " is (de)serialized by the REST API but missing from NativeReflection");
        }
    }

    private static void collect(Type type, Deque<Class<?>> todo) {
        if (type instanceof Class<?> c && c.isRecord()) {
            todo.add(c);
        } else if (type instanceof ParameterizedType p) {
            for (Type argument : p.getActualTypeArguments()) {
                collect(argument, todo);
            }
        }
    }
}
