package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import javax.net.ssl.SSLEngine;

import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.security.ssl.DefaultSslEngineFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Kafka client of a process shares one TLS context per setting (KafkaClientSecurity names this factory): built
 * once, kept when a client closes, rebuilt for a changed trust file or other settings.
 */
class SharedSslEngineFactoryTest {

    @TempDir
    Path dir;

    @Test
    void clientsWithTheSameTlsSettingsShareOneContextAndOneClosingLeavesItToTheOthers() throws Exception {
        Map<String, Object> settings = settings(trustFile("ca.pem", CA));
        SharedSslEngineFactory first = configured(settings);
        Map<String, Object> otherClient = new HashMap<>(settings); // Kafka hands over the client's whole config
        otherClient.put("client.id", "claim-service-outbox");
        otherClient.put("group.id", "claim-service");
        SharedSslEngineFactory second = configured(otherClient);
        assertSame(first.sslContext(), second.sslContext());
        assertEquals(SharedSslEngineFactory.RESUME_SECONDS, first.sslContext().getClientSessionContext().getSessionTimeout(),
            "sessions offered for resumption 5 minutes, not the JDK's 24 h");

        first.close();
        SSLEngine engine = second.createClientSslEngine("127.0.0.1", 9093, "https");
        assertTrue(engine.getUseClientMode());
        assertEquals("https", engine.getSSLParameters().getEndpointIdentificationAlgorithm());
        assertSame(second.sslContext(), configured(settings).sslContext(), "a closed client's context stays shared");
    }

    @Test
    void aRewrittenTrustFileOrOtherSettingsGetAContextOfTheirOwn() throws Exception {
        Path ca = trustFile("rotating-ca.pem", CA);
        Map<String, Object> settings = settings(ca);
        SharedSslEngineFactory before = configured(settings);

        Files.writeString(ca, CA + CA); // rotated in place: same path, new content
        SharedSslEngineFactory after = configured(settings);
        assertNotSame(before.sslContext(), after.sslContext());
        assertEquals(1, countCertificates(before));
        assertEquals(2, countCertificates(after), "the new context trusts the new file's content");

        Map<String, Object> tls13Only = new HashMap<>(settings);
        tls13Only.put(SslConfigs.SSL_ENABLED_PROTOCOLS_CONFIG, java.util.List.of("TLSv1.3")); // parsed, as Kafka passes it
        assertNotSame(after.sslContext(), configured(tls13Only).sslContext());
    }

    @Test
    void kafkaClientSecurityNamesThisFactoryForEveryTlsLogin() throws Exception {
        Path ca = trustFile("login-ca.pem", CA);
        Path password = Files.writeString(Files.createFile(dir.resolve("pw"),
            java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"))), "secret");
        Map<String, Object> props = KafkaClientSecurity.scram("node-1", password, ca).clientProperties();
        assertEquals(SharedSslEngineFactory.class.getName(), props.get(SslConfigs.SSL_ENGINE_FACTORY_CLASS_CONFIG));
        assertEquals(null, KafkaClientSecurity.plaintext().clientProperties().get(SslConfigs.SSL_ENGINE_FACTORY_CLASS_CONFIG));
    }

    private static int countCertificates(SharedSslEngineFactory factory) throws Exception {
        return java.util.Collections.list(factory.truststore().aliases()).size();
    }

    private static SharedSslEngineFactory configured(Map<String, Object> settings) {
        SharedSslEngineFactory factory = new SharedSslEngineFactory();
        factory.configure(settings);
        return factory;
    }

    /** What Kafka's SslFactory hands an engine factory for a client trusting a PEM CA (as KafkaClientSecurity sets). */
    private static Map<String, Object> settings(Path ca) {
        Map<String, Object> settings = new HashMap<>();
        settings.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, DefaultSslEngineFactory.PEM_TYPE);
        settings.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, ca.toString());
        settings.put(SslConfigs.SSL_PROTOCOL_CONFIG, "TLSv1.3");
        settings.put(SslConfigs.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM_CONFIG, "https");
        settings.put(SslConfigs.SSL_ENGINE_FACTORY_CLASS_CONFIG, SharedSslEngineFactory.class);
        return settings;
    }

    private Path trustFile(String name, String pem) throws Exception {
        return Files.writeString(dir.resolve(name), pem);
    }

    /** A self-signed EC certificate (CN=scheduler-unit), public only. */
    private static final String CA = "-----BEGIN CERTIFICATE-----\n" + "MIIBijCCAS+gAwIBAgIUJ2Nw5kDi+yZyO+pambt1mvUVrL0wCgYIKoZIzj0EAwIw\n" + "GTEXMBUGA1UEAwwOc2NoZWR1bGVyLXVuaXQwIBcNMjYxMTI5MTE1NTE3WhgPMjEy\n" + "NjExMDUxMTU1MTdaMBkxFzAVBgNVBAMMDnNjaGVkdWxlci11bml0MFkwEwYHKoZI\n" + "zj0CAQYIKoZIzj0DAQcDQgAEOpw4jEGd2bWpeUVGuuwe6KubkdmxrK0zwPjZ7bu3\n" + "4zORCjUVcToTBzrm6j842Y0chYz0k1PKv3vf8f44q7Dth6NTMFEwHQYDVR0OBBYE\n" + "FOYGw0hQKoFRUuJ/PkadjvOQL9otMB8GA1UdIwQYMBaAFOYGw0hQKoFRUuJ/Pkad\n" + "jvOQL9otMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAN1zmPMv\n" + "Sn9EUrmTPVQXNfSlPeECDJCLhyla5jNmo1E9AiEAyesFbYFNzKyn8lHr1csKbrmO\n" + "+F/qd930MIbNMm6bx0Q=\n" + "-----END CERTIFICATE-----\n";
}
