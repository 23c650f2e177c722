package io.csiorchestrator.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import io.csiorchestrator.plugins.api.PluginViews;
import io.csiorchestrator.plugins.store.JsonColumns;
import io.quarkus.runtime.annotations.RegisterForReflection;
import java.io.File;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.net.URISyntaxException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Every class Jackson (de)serializes here is registered for reflection in {@link NativeReflection}. */
class NativeReflectionTest {

    private static final RegisterForReflection REGISTRATION = NativeReflection.class.getAnnotation(RegisterForReflection.class);

    private static Set<String> registered() {
        Set<String> names = Arrays.stream(REGISTRATION.targets()).map(Class::getName).collect(Collectors.toCollection(TreeSet::new));
        names.addAll(List.of(REGISTRATION.classNames()));
        return names;
    }

    @Test
    void everyRestShapeAndEveryRecordReachableFromOneIsRegistered() {
        Set<Class<?>> reachable = new HashSet<>();
        Deque<Class<?>> todo = new ArrayDeque<>(Arrays.asList(PluginViews.class.getDeclaredClasses()));
        todo.addAll(Arrays.asList(io.csiorchestrator.plugins.api.NodeResource.class.getDeclaredClasses()));
        while (!todo.isEmpty()) {
            Class<?> type = todo.pop();
            if (!type.getName().startsWith("io.csiorchestrator.") || !reachable.add(type)) {
                continue;
            }
            if (type.isRecord()) {
                for (RecordComponent component : type.getRecordComponents()) {
                    collect(component.getGenericType(), todo);
                }
            }
        }
        Set<String> missing = reachable.stream().map(Class::getName).filter(n -> !registered().contains(n))
                .collect(Collectors.toCollection(TreeSet::new));
        assertTrue(missing.isEmpty(), "not registered for reflection: " + missing);
        assertTrue(reachable.size() >= 6, "found the REST shapes: " + reachable);
    }

    @Test
    void everyJsonColumnTypeReferenceAndWhatItReadsIsRegistered() throws Exception {
        Set<String> expected = new TreeSet<>();
        for (Class<?> type : classesInPackageOf(JsonColumns.class)) {
            if (TypeReference.class.isAssignableFrom(type)) {
                expected.add(type.getName());
                // The type read through the reference (a TreeMap, a List) must be constructible too.
                Type target = ((ParameterizedType) type.getGenericSuperclass()).getActualTypeArguments()[0];
                Class<?> raw = (Class<?>) (target instanceof ParameterizedType p ? p.getRawType() : target);
                if (!raw.isInterface()) {
                    expected.add(raw.getName());
                }
            }
        }
        assertTrue(expected.size() >= 3, "found the type references and the map they read: " + expected);
        Set<String> missing = new TreeSet<>(expected);
        missing.removeAll(registered());
        assertEquals(Set.of(), missing, "not registered for reflection");
    }

    @Test
    void everyRegisteredClassNameExists() throws ClassNotFoundException {
        for (String name : REGISTRATION.classNames()) {
            Class.forName(name);
        }
    }

    private static void collect(Type type, Deque<Class<?>> todo) {
        if (type instanceof Class<?> c) {
            todo.push(c);
        } else if (type instanceof ParameterizedType p) {
            for (Type argument : p.getActualTypeArguments()) {
                collect(argument, todo);
            }
        }
    }

    private static List<Class<?>> classesInPackageOf(Class<?> anchor) throws URISyntaxException, ClassNotFoundException {
        File dir = new File(anchor.getResource(anchor.getSimpleName() + ".class").toURI()).getParentFile();
        String prefix = anchor.getPackageName() + ".";
        List<Class<?>> classes = new java.util.ArrayList<>();
        for (String file : dir.list((d, name) -> name.endsWith(".class"))) {
            classes.add(Class.forName(prefix + file.substring(0, file.length() - ".class".length())));
        }
        return classes;
    }
}
