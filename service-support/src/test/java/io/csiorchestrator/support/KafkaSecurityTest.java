package io.csiorchestrator.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.csiorchestrator.events.KafkaClientSecurity;

/** Every SmallRye channel's client (consumer, producer, dead-letter producer) gets the service's Kafka security. */
class KafkaSecurityTest {

    @TempDir
    Path dir;

    /** A channel's config gains SASL_SSL, SCRAM-SHA-512, the JAAS line and the truststore; its own keys are kept. */
    @Test
    void everyChannelGetsTheServiceCredential() throws Exception {
        Path password = Files.createFile(dir.resolve("pw"),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(password, "secret-1\n");
        Path ca = Files.writeString(dir.resolve("ca.pem"), "pem");
        KafkaSecurity customizer = new KafkaSecurity(KafkaClientSecurity.scram("claim-service", password, ca));
        Map<String, Object> config = customizer.customize("claim-requested", null,
            Map.of("group.id", "claim-service", "bootstrap.servers", "127.0.0.1:1"));
        assertEquals("SASL_SSL", config.get("security.protocol"));
        assertEquals("SCRAM-SHA-512", config.get("sasl.mechanism"));
        assertTrue(((String) config.get("sasl.jaas.config")).contains("username=\"claim-service\" password=\"secret-1\""));
        assertEquals(ca.toAbsolutePath().toString(), config.get("ssl.truststore.location"));
        assertEquals("claim-service", config.get("group.id"));
        assertEquals("127.0.0.1:1", config.get("bootstrap.servers"));
        // the TLS engine factory the settings name is one a native image can instantiate by its name
        String factory = (String) config.get("ssl.engine.factory.class");
        assertTrue(java.util.Arrays.stream(KafkaSecurity.class
                .getAnnotation(io.quarkus.runtime.annotations.RegisterForReflection.class).targets())
            .anyMatch(c -> c.getName().equals(factory)), factory + " registered for reflection");
    }
}
