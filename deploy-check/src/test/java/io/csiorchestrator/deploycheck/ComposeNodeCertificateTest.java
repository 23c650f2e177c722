package io.csiorchestrator.deploycheck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.localinfra.Kraft;

/**
 * The compose node's client certificate as {@code deploy/compose/kafka-init.sh} makes it (run for real with the
 * machine's keytool and openssl, as the kafka-init container would with the image's): {@code CN=node-<id>}, signed by
 * the client CA the broker's SSL listener trusts (not the broker's CA), living {@code CSI_KAFKA_NODE_CERT_TTL}, key
 * and certificate 0600 in the worker's volume; kept on a second run, made anew when a third or less of a new lifetime
 * is left or the node id changed; a lifetime that is not whole days is refused naming the variable. The broker side
 * is ComposeKafkaBrokerTest's.
 */
class ComposeNodeCertificateTest {

    private Path dir;

    @BeforeEach
    void directories() throws IOException {
        dir = Files.createTempDirectory("csi-compose-cert-");
        for (String volume : List.of("broker", "node")) {
            Files.createDirectories(dir.resolve("out").resolve(volume));
        }
    }

    @AfterEach
    void clean() {
        Kraft.deleteRecursively(dir);
    }

    @Test
    void initIssuesTheNodeCertificateUnderTheClientCaAndRenewsItWhenShort() throws Exception {
        Instant before = Instant.now();
        Result first = init("node-1", "30d");
        assertEquals(0, first.code(), first.output());
        assertTrue(first.output().contains("issued node-node-1's certificate for 30d"), first.output());
        Path pem = dir.resolve("out/node/node.pem");
        Path key = dir.resolve("out/node/node.key");
        for (Path file : List.of(pem, key)) {
            assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(file), file.toString());
            assertEquals(Files.getAttribute(dir, "unix:uid"), Files.getAttribute(file, "unix:uid"), "the worker's uid");
        }
        assertTrue(Files.readString(key).startsWith("-----BEGIN PRIVATE KEY-----"), "an unencrypted PKCS#8 key");
        List<X509Certificate> chain = certificates(pem);
        X509Certificate leaf = chain.get(0);
        X509Certificate clientCa = certificates(dir.resolve("out/broker/client-ca.pem")).get(0);
        assertEquals("CN=node-node-1", leaf.getSubjectX500Principal().getName());
        assertEquals(clientCa, chain.get(1), "the chain ends with the client CA");
        leaf.verify(clientCa.getPublicKey());
        assertNotEquals(certificates(dir.resolve("out/node/ca.pem")).get(0), clientCa, "not the broker's CA");
        assertEquals(List.of("1.3.6.1.5.5.7.3.2"), leaf.getExtendedKeyUsage(), "client authentication only");
        assertFalse(leaf.getNotAfter().toInstant().isBefore(before.plus(Duration.ofDays(30)).minusSeconds(5)));
        assertFalse(leaf.getNotAfter().toInstant().isAfter(Instant.now().plus(Duration.ofDays(30)).plusSeconds(5)));

        Result again = init("node-1", "30d");
        assertEquals(0, again.code(), again.output());
        assertFalse(again.output().contains("issued"), again.output());
        assertEquals(leaf, certificates(pem).get(0), "a second run keeps the certificate");

        Result longer = init("node-1", "100d");
        assertEquals(0, longer.code(), longer.output());
        X509Certificate renewed = certificates(pem).get(0);
        assertNotEquals(leaf.getSerialNumber(), renewed.getSerialNumber(), "30 days left of 100: made anew");
        assertFalse(renewed.getNotAfter().toInstant().isBefore(Instant.now().plus(Duration.ofDays(100)).minusSeconds(60)));

        Result other = init("node-2", "100d");
        assertEquals(0, other.code(), other.output());
        assertEquals("CN=node-node-2", certificates(pem).get(0).getSubjectX500Principal().getName());
    }

    @Test
    void initRefusesALifetimeThatIsNotWholeDays() throws Exception {
        for (String ttl : List.of("12h", "0d", "d", "366d", "-1d")) {
            Result refused = init("node-1", ttl);
            assertEquals(2, refused.code(), ttl + ": " + refused.output());
            assertTrue(refused.output().contains("CSI_KAFKA_NODE_CERT_TTL") && refused.output().contains(ttl),
                refused.output());
            assertFalse(Files.exists(dir.resolve("out/node/node.pem")), ttl + " made no certificate");
        }
    }

    private record Result(int code, String output) {
    }

    private Result init(String node, String ttl) throws IOException, InterruptedException {
        String uid = String.valueOf(Files.getAttribute(dir, "unix:uid"));
        Map<String, String> env = new HashMap<>(Map.of("CSI_KAFKA_MATERIAL", dir.resolve("material").toString(),
            "CSI_KAFKA_OUT", dir.resolve("out").toString(), "CSI_KAFKA_UID", uid, "CSI_SERVICE_UID", uid,
            "CSI_WORKER_UID", uid, "CSI_NODE_ID", node, "CSI_KAFKA_NODE_CERT_TTL", ttl));
        List<String> command = new ArrayList<>(List.of("sh",
            Manifests.root().resolve("deploy/compose/kafka-init.sh").toString()));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(env);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(2, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            throw new AssertionError("kafka-init.sh did not finish in 2 minutes: " + output);
        }
        return new Result(process.exitValue(), output);
    }

    private static List<X509Certificate> certificates(Path pem) throws Exception {
        List<X509Certificate> out = new ArrayList<>();
        for (var c : CertificateFactory.getInstance("X.509").generateCertificates(
                new ByteArrayInputStream(Files.readAllBytes(pem)))) {
            out.add((X509Certificate) c);
        }
        return out;
    }
}
