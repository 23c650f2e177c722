package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A native image reads and writes the events with Jackson only if every record and enum of the
 * contract is registered for reflection. This walks the contract from {@link ContractEvent}'s
 * permitted records through their components and fails, printing the missing names, when
 * META-INF/native-image/.../reflect-config.json falls behind.
 */
class NativeReflectionConfigTest {

    private static final String CONFIG = "/META-INF/native-image/io.csiorchestrator/events-schema/reflect-config.json";
    private static final String PACKAGE = ContractEvent.class.getPackageName() + ".";

    @Test
    void everyClassTheCodecTouchesIsRegistered() throws Exception {
        Set<String> needed = new TreeSet<>();
        Deque<Class<?>> todo = new ArrayDeque<>(java.util.List.of(ContractEvent.class.getPermittedSubclasses()));
        todo.push(SecretPayload.class); // sealed inside NodeCommand, but written with the same mapper
        while (!todo.isEmpty()) {
            Class<?> type = todo.pop();
            if (!type.getName().startsWith(PACKAGE) || !needed.add(type.getName())) {
                continue;
            }
            if (type.isRecord()) {
                for (RecordComponent component : type.getRecordComponents()) {
                    collect(component.getGenericType(), todo);
                }
            }
        }

        Set<String> registered = new TreeSet<>();
        try (InputStream in = getClass().getResourceAsStream(CONFIG)) {
            assertNotNull(in, CONFIG + " is missing");
            for (JsonNode entry : EventCodec.mapper().readTree(in)) {
                registered.add(entry.get("name").asText());
                assertEquals(true, entry.path("allDeclaredConstructors").asBoolean(), entry + " needs its constructors");
                assertEquals(true, entry.path("allDeclaredMethods").asBoolean(), entry + " needs its methods (record accessors, @JsonValue)");
                assertEquals(true, entry.path("allDeclaredFields").asBoolean(), entry + " needs its fields");
            }
        }
        assertEquals(needed, registered, "reflect-config.json must list exactly the contract's records and enums");
    }

    private static void collect(Type type, Deque<Class<?>> todo) {
        if (type instanceof Class<?> c) {
            todo.push(c.isArray() ? c.getComponentType() : c);
        } else if (type instanceof ParameterizedType p) {
            collect(p.getRawType(), todo);
            for (Type argument : p.getActualTypeArguments()) {
                collect(argument, todo);
            }
        }
    }
}
