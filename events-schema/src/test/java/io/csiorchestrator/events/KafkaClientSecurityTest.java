package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The one place Kafka clients get their security settings from. */
class KafkaClientSecurityTest {

    @TempDir
    Path dir;

    /** A user name, a 0600 password file and a truststore give SASL_SSL/SCRAM-SHA-512 with a PEM truststore. */
    @Test
    void scramSettingsFromConfig() throws Exception {
        Path password = ownerOnly("pw", "s3cr\"et\n");
        Path ca = Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
        Map<String, String> config = Map.of(KafkaClientSecurity.USERNAME, "node-1",
            KafkaClientSecurity.PASSWORD_FILE, password.toString(), KafkaClientSecurity.TRUSTSTORE, ca.toString());
        KafkaClientSecurity security = KafkaClientSecurity.from(key -> Optional.ofNullable(config.get(key)));
        Map<String, Object> props = security.clientProperties();
        assertEquals("SASL_SSL", props.get("security.protocol"));
        assertEquals("SCRAM-SHA-512", props.get("sasl.mechanism"));
        assertEquals("org.apache.kafka.common.security.scram.ScramLoginModule required username=\"node-1\" password=\"s3cr\\\"et\";",
            props.get("sasl.jaas.config"));
        assertEquals("PEM", props.get("ssl.truststore.type"));
        assertEquals(ca.toAbsolutePath().toString(), props.get("ssl.truststore.location"));
        assertFalse(security.toString().contains("s3cr"), security.toString());
        assertTrue(security.toString().contains("node-1"));
    }

    /** A self-signed certificate of {@code CN=scheduler-unit} (public: no key goes with it here). */
    private static final String CERTIFICATE = "-----BEGIN CERTIFICATE-----\n" + "MIIBijCCAS+gAwIBAgIUJ2Nw5kDi+yZyO+pambt1mvUVrL0wCgYIKoZIzj0EAwIw\n" + "GTEXMBUGA1UEAwwOc2NoZWR1bGVyLXVuaXQwIBcNMjYxMTI5MTE1NTE3WhgPMjEy\n" + "NjExMDUxMTU1MTdaMBkxFzAVBgNVBAMMDnNjaGVkdWxlci11bml0MFkwEwYHKoZI\n" + "zj0CAQYIKoZIzj0DAQcDQgAEOpw4jEGd2bWpeUVGuuwe6KubkdmxrK0zwPjZ7bu3\n" + "4zORCjUVcToTBzrm6j842Y0chYz0k1PKv3vf8f44q7Dth6NTMFEwHQYDVR0OBBYE\n" + "FOYGw0hQKoFRUuJ/PkadjvOQL9otMB8GA1UdIwQYMBaAFOYGw0hQKoFRUuJ/Pkad\n" + "jvOQL9otMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAN1zmPMv\n" + "Sn9EUrmTPVQXNfSlPeECDJCLhyla5jNmo1E9AiEAyesFbYFNzKyn8lHr1csKbrmO\n" + "+F/qd930MIbNMm6bx0Q=\n" + "-----END CERTIFICATE-----\n";

    /**
     * A certificate file and a 0600 key file (issue 33) give SSL with a PEM key store given inline (the key a
     * password-type setting Kafka never logs); the principal is the certificate's CN; nothing printable shows the key.
     */
    @Test
    void certificateSettingsFromConfig() throws Exception {
        Path cert = Files.writeString(dir.resolve("kafka-client.pem"), CERTIFICATE);
        Path key = ownerOnly("kafka-client.key", "-----BEGIN PRIVATE KEY-----\nTUFERS1VUA==\n-----END PRIVATE KEY-----\n");
        Path ca = Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
        Map<String, String> config = Map.of(KafkaClientSecurity.CERTIFICATE_FILE, cert.toString(),
            KafkaClientSecurity.KEY_FILE, key.toString(), KafkaClientSecurity.TRUSTSTORE, ca.toString());
        KafkaClientSecurity security = KafkaClientSecurity.from(k -> Optional.ofNullable(config.get(k)));
        assertTrue(security.certificateLogin());
        assertEquals(Optional.of("scheduler-unit"), security.username());
        Map<String, Object> props = security.clientProperties();
        assertEquals("SSL", props.get("security.protocol"));
        assertEquals("PEM", props.get("ssl.keystore.type"));
        assertEquals(CERTIFICATE, props.get("ssl.keystore.certificate.chain"));
        assertTrue(String.valueOf(props.get("ssl.keystore.key")).contains("TUFERS1VUA=="));
        assertFalse(props.containsKey("sasl.jaas.config"));
        assertEquals(ca.toAbsolutePath().toString(), props.get("ssl.truststore.location"));
        assertFalse(security.toString().contains("TUFERS1VUA"), security.toString());
    }

    /** A key others may read, a certificate file that is none, or a key file without its partner: refused, named. */
    @Test
    void badCertificateSettingsAreRefusedNamingTheSetting() throws Exception {
        Path cert = Files.writeString(dir.resolve("kafka-client.pem"), CERTIFICATE);
        Path ca = Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
        Path open = Files.writeString(dir.resolve("open.key"), "-----BEGIN PRIVATE KEY-----\n");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> KafkaClientSecurity.certificate(cert, open, ca));
        assertTrue(e.getMessage().contains(KafkaClientSecurity.KEY_FILE), e.getMessage());
        Path key = ownerOnly("kafka-client.key", "-----BEGIN PRIVATE KEY-----\n");
        Path notCert = Files.writeString(dir.resolve("not.pem"), "hello");
        e = assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.certificate(notCert, key, ca));
        assertTrue(e.getMessage().contains(KafkaClientSecurity.CERTIFICATE_FILE), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.from(k -> Optional.ofNullable(
            Map.of(KafkaClientSecurity.CERTIFICATE_FILE, cert.toString(), KafkaClientSecurity.TRUSTSTORE, ca.toString())
                .get(k))));
        assertTrue(e.getMessage().contains(KafkaClientSecurity.KEY_FILE), e.getMessage());
    }

    /**
     * A token file (issue 20 item 8) gives a SCRAM login with tokenauth: the token id as user, the HMAC as password;
     * the principal is the owner, and nothing printable shows the HMAC.
     */
    @Test
    void tokenSettingsFromConfig() throws Exception {
        KafkaToken token = new KafkaToken("node-1", "tok-AB12", "c2VjcmV0LWhtYWM=", java.time.Instant.parse("2026-12-28T10:00:00Z"));
        Path file = ownerOnly("node-1.token", token.toFileText());
        Path ca = Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
        Map<String, String> config = Map.of(KafkaClientSecurity.TOKEN_FILE, file.toString(),
            KafkaClientSecurity.TRUSTSTORE, ca.toString());
        KafkaClientSecurity security = KafkaClientSecurity.from(key -> Optional.ofNullable(config.get(key)));
        assertEquals(Optional.of("node-1"), security.username());
        assertEquals(Optional.of(token), security.token());
        Map<String, Object> props = security.clientProperties();
        assertEquals("SASL_SSL", props.get("security.protocol"));
        assertEquals("org.apache.kafka.common.security.scram.ScramLoginModule required username=\"tok-AB12\""
            + " password=\"c2VjcmV0LWhtYWM=\" tokenauth=\"true\";", props.get("sasl.jaas.config"));
        assertFalse(security.toString().contains("c2VjcmV0"), security.toString());
        assertFalse(token.toString().contains("c2VjcmV0"), token.toString());
        assertTrue(security.toString().contains("tok-AB12 of node-1"), security.toString());
    }

    /** A token file others may read, one missing a field, or a token and a user at once: errors naming what is wrong. */
    @Test
    void badTokenFilesAreRefusedNamingTheProblem() throws Exception {
        KafkaToken token = new KafkaToken("node-1", "tok-1", "aG1hYw==", java.time.Instant.parse("2026-12-28T10:00:00Z"));
        Path ca = Files.writeString(dir.resolve("ca.pem"), "x");
        Path open = ownerOnly("open.token", token.toFileText());
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.token(open, ca));
        assertTrue(e.getMessage().contains("csi.kafka.token-file") && e.getMessage().contains("chmod 600"), e.getMessage());
        assertFalse(e.getMessage().contains("aG1hYw"), e.getMessage());

        Path noExpiry = ownerOnly("no-expiry.token", "owner=node-1\ntoken-id=tok-1\nhmac=aG1hYw==\n");
        e = assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.token(noExpiry, ca));
        assertTrue(e.getMessage().contains("no expires="), e.getMessage());

        Path badOwner = ownerOnly("bad-owner.token", "owner=../x\ntoken-id=tok-1\nhmac=aG1hYw==\nexpires=2026-12-28T10:00:00Z\n");
        e = assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.token(badOwner, ca));
        assertTrue(e.getMessage().contains("owner") && e.getMessage().contains("../x"), e.getMessage());

        Path good = ownerOnly("good.token", token.toFileText());
        Map<String, String> both = Map.of(KafkaClientSecurity.TOKEN_FILE, good.toString(), KafkaClientSecurity.USERNAME, "node-1",
            KafkaClientSecurity.TRUSTSTORE, ca.toString());
        e = assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.from(key -> Optional.ofNullable(both.get(key))));
        assertTrue(e.getMessage().contains("either"), e.getMessage());
    }

    /** A password file that group or others may read is refused, naming the file, never its content. */
    @Test
    void passwordFileReadableByOthersIsRefused() throws Exception {
        Path password = ownerOnly("pw", "hunter2");
        Files.setPosixFilePermissions(password, PosixFilePermissions.fromString("rw-r--r--"));
        Path ca = Files.writeString(dir.resolve("ca.pem"), "x");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> KafkaClientSecurity.scram("node-1", password, ca));
        assertTrue(e.getMessage().contains("chmod 600"), e.getMessage());
        assertFalse(e.getMessage().contains("hunter2"));
    }

    /** Without a user name the client is PLAINTEXT; a user name without password file or truststore is an error. */
    @Test
    void incompleteSettingsAreRefused() {
        assertEquals(Map.of("security.protocol", "PLAINTEXT"),
            KafkaClientSecurity.from(key -> Optional.empty()).clientProperties());
        assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.from(
            key -> key.equals(KafkaClientSecurity.USERNAME) ? Optional.of("node-1") : Optional.empty()));
        assertThrows(IllegalArgumentException.class, () -> KafkaClientSecurity.from(
            key -> key.equals(KafkaClientSecurity.PROTOCOL) ? Optional.of("SASL_SSL") : Optional.empty()));
        assertEquals("CSI_KAFKA_PASSWORD_FILE", KafkaClientSecurity.envName(KafkaClientSecurity.PASSWORD_FILE));
    }

    private Path ownerOnly(String name, String text) throws Exception {
        Path file = Files.createFile(dir.resolve(name), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        return Files.writeString(file, text);
    }
}
