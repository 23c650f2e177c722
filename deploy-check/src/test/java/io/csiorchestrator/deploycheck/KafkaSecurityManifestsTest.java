package io.csiorchestrator.deploycheck;

import static io.csiorchestrator.deploycheck.Manifests.documents;
import static io.csiorchestrator.deploycheck.Manifests.kubernetesDir;
import static io.csiorchestrator.deploycheck.Manifests.kubernetesObjects;
import static io.csiorchestrator.deploycheck.Manifests.map;
import static io.csiorchestrator.deploycheck.Manifests.maps;
import static io.csiorchestrator.deploycheck.Manifests.ofKind;
import static io.csiorchestrator.deploycheck.Manifests.read;
import static io.csiorchestrator.deploycheck.Manifests.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import io.csiorchestrator.events.KafkaAccess.Principal;

/**
 * The Kubernetes manifests run Kafka closed: every service authenticates (SASL_SSL, SCRAM-SHA-512) as a principal that
 * has a Strimzi KafkaUser with a password, every node with a TLS client certificate of a principal whose KafkaUser has
 * ACLs and {@code authentication: tls} (issue 33), every KafkaUser is exactly what events-schema's KafkaAccess table renders
 * (ACLs, quotas), none has a wildcard or no ACL at all, and nothing is configured PLAINTEXT.
 */
class KafkaSecurityManifestsTest {

    /** kafka-users.yaml and the node and scheduler templates are what KafkaUserManifests renders from the table. */
    @Test
    void kafkaUsersAreRenderedFromTheAccessTable() {
        assertEquals(KafkaUserManifests.usersFile(), read(kubernetesDir().resolve(KafkaUserManifests.USERS_FILE)),
            "kafka-users.yaml drifted from KafkaAccess: run KafkaUserManifests.main");
        assertEquals(KafkaUserManifests.template(Principal.node(KafkaUserManifests.ID), "node"),
            read(kubernetesDir().resolve(KafkaUserManifests.NODE_TEMPLATE)), "node template drifted from KafkaAccess");
        assertEquals(KafkaUserManifests.template(Principal.scheduler(KafkaUserManifests.ID), "upstream scheduler"),
            read(kubernetesDir().resolve(KafkaUserManifests.SCHEDULER_TEMPLATE)), "scheduler template drifted from KafkaAccess");
    }

    /**
     * Every KafkaUser has at least one ACL, no wildcard resource, only Read, Write or Create, literal or prefix
     * patterns, and quotas; the services' and the operator's authenticate with SCRAM-SHA-512, the node's and the
     * scheduler's templates with TLS client certificates (no password; issue 33).
     */
    @Test
    void everyKafkaUserHasAclsWithoutWildcardsAndQuotas() {
        List<Map<String, Object>> users = kafkaUsers();
        assertTrue(users.size() >= 5, "KafkaUsers: " + users.size());
        for (Map<String, Object> user : users) {
            String name = string(user, "metadata", "name");
            if (name.startsWith("node-") || name.startsWith("scheduler-")) {
                assertEquals("tls", string(user, "spec", "authentication", "type"), name + " logs in by certificate");
            } else {
                assertEquals("scram-sha-512", string(user, "spec", "authentication", "type"), name);
            }
            assertEquals("simple", string(user, "spec", "authorization", "type"), name);
            List<Map<String, Object>> acls = maps(user, "spec", "authorization", "acls");
            assertFalse(acls.isEmpty(), name + " has no ACL");
            for (Map<String, Object> acl : acls) {
                String resource = string(acl, "resource", "name");
                assertNotNull(resource, name + ": an ACL without a resource name (all resources): " + acl);
                assertNotEquals("*", resource, name + ": wildcard ACL " + acl);
                assertFalse(resource.isBlank(), name + ": " + acl);
                assertTrue(Set.of("literal", "prefix").contains(string(acl, "resource", "patternType")), name + ": " + acl);
                assertTrue(Set.of("topic", "group").contains(string(acl, "resource", "type")), name + ": " + acl);
                assertTrue(Set.of("[Read]", "[Write]", "[Create]").contains(String.valueOf(acl.get("operations"))),
                    name + ": " + acl);
                assertEquals("*", acl.get("host"), name + ": " + acl);
            }
            Map<String, Object> quotas = map(user, "spec", "quotas");
            for (String key : List.of("producerByteRate", "consumerByteRate", "requestPercentage")) {
                assertTrue(quotas.get(key) instanceof Number n && n.longValue() > 0, name + ": quota " + key);
            }
        }
    }

    /**
     * Every workload that talks to Kafka names a principal that has a KafkaUser, with its password and CA files; the
     * worker its node's client certificate and key (on the node's own /etc/csi/kafka, protocol SSL) and the CA, no
     * user and no password.
     */
    @Test
    void everyWorkloadAuthenticatesAsAPrincipalWithAKafkaUser() {
        Set<String> users = new TreeSet<>();
        kafkaUsers().forEach(u -> users.add(string(u, "metadata", "name")));
        Set<String> used = new TreeSet<>();
        for (Map<String, Object> workload : kubernetesObjects()) {
            if (!Set.of("Deployment", "DaemonSet", "StatefulSet").contains(workload.get("kind"))) {
                continue;
            }
            for (Map<String, Object> container : maps(workload, "spec", "template", "spec", "containers")) {
                if (Manifests.at(container, "env").isEmpty()) {
                    continue;
                }
                String where = workload.get("kind") + " " + string(workload, "metadata", "name") + "/" + container.get("name");
                Map<String, String> env = new java.util.HashMap<>();
                for (Map<String, Object> entry : maps(container, "env")) {
                    env.put(String.valueOf(entry.get("name")), string(entry, "value"));
                }
                if (!env.containsKey("CSI_WORKER_NODE_ID") && !Set.of("claim-service", "plugin-registry-service")
                        .contains(container.get("name"))) {
                    continue; // not a Kafka client (the plugin sidecar)
                }
                String user = env.get("CSI_KAFKA_USERNAME");
                assertNotNull(env.get("CSI_KAFKA_TRUSTSTORE"), where);
                String principal;
                if (env.containsKey("CSI_WORKER_NODE_ID")) {
                    // the certificate's CN is node-<node name>: the User Operator issues it for the node's KafkaUser
                    assertNull(user, where + " logs in with its node's certificate, not as a user with a password");
                    assertNull(env.get("CSI_KAFKA_PASSWORD_FILE"), where + " has no Kafka password");
                    assertNull(env.get("CSI_KAFKA_TOKEN_FILE"), where + " logs in by certificate");
                    assertEquals("SSL", env.get("CSI_KAFKA_SECURITY_PROTOCOL"), where);
                    assertEquals("/etc/csi/kafka/kafka-client.pem", env.get("CSI_KAFKA_CERTIFICATE_FILE"), where);
                    assertEquals("/etc/csi/kafka/kafka-client.key", env.get("CSI_KAFKA_KEY_FILE"), where);
                    Map<String, Object> mount = maps(container, "volumeMounts").stream()
                        .filter(m -> "/etc/csi/kafka".equals(m.get("mountPath"))).findFirst()
                        .orElseThrow(() -> new AssertionError(where + " mounts nothing at /etc/csi/kafka"));
                    assertEquals(Boolean.TRUE, mount.get("readOnly"), where);
                    Map<String, Object> volume = maps(workload, "spec", "template", "spec", "volumes").stream()
                        .filter(v -> mount.get("name").equals(v.get("name"))).findFirst().orElseThrow();
                    assertEquals("/etc/csi/kafka", string(volume, "hostPath", "path"), "the node's own credential directory");
                    principal = "node-" + KafkaUserManifests.ID;
                } else {
                    assertNotNull(user, where + " has no CSI_KAFKA_USERNAME: it would connect unauthenticated");
                    assertNotNull(env.get("CSI_KAFKA_PASSWORD_FILE"), where);
                    principal = user;
                }
                used.add(principal);
                assertTrue(users.contains(principal), where + " authenticates as " + principal + ", which has no KafkaUser: " + users);
            }
        }
        assertEquals(Set.of("claim-service", "plugin-registry-service", "node-" + KafkaUserManifests.ID), used);
    }

    /** The shared configuration says SASL_SSL, and no manifest configures a PLAINTEXT Kafka connection. */
    @Test
    void noManifestConfiguresPlaintextKafka() {
        Map<String, Object> config = documents(kubernetesDir().resolve("configmap.yaml")).get(0);
        assertEquals("SASL_SSL", string(config, "data", "CSI_KAFKA_SECURITY_PROTOCOL"));
        for (java.nio.file.Path file : Manifests.yamlFilesUnder(kubernetesDir())) {
            assertFalse(read(file).contains("PLAINTEXT"), file + " mentions PLAINTEXT");
        }
    }

    private static List<Map<String, Object>> kafkaUsers() {
        return ofKind(kubernetesObjects(), "KafkaUser");
    }
}
