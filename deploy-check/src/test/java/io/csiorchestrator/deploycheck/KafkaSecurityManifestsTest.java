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
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import io.csiorchestrator.events.KafkaAccess.Principal;

/**
 * The Kubernetes manifests run Kafka closed: every service and node authenticates (SASL_SSL, SCRAM-SHA-512) as a
 * principal that has a Strimzi KafkaUser, every KafkaUser is exactly what events-schema's KafkaAccess table renders
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
     * Every KafkaUser authenticates with SCRAM-SHA-512, has at least one ACL, no wildcard resource, only Read,
     * Write or Create, literal or prefix patterns, and quotas.
     */
    @Test
    void everyKafkaUserHasAclsWithoutWildcardsAndQuotas() {
        List<Map<String, Object>> users = kafkaUsers();
        assertTrue(users.size() >= 5, "KafkaUsers: " + users.size());
        for (Map<String, Object> user : users) {
            String name = string(user, "metadata", "name");
            assertEquals("scram-sha-512", string(user, "spec", "authentication", "type"), name);
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

    /** Every workload that talks to Kafka names a principal that has a KafkaUser, with its password and CA files. */
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
                assertNotNull(user, where + " has no CSI_KAFKA_USERNAME: it would connect unauthenticated");
                assertNotNull(env.get("CSI_KAFKA_PASSWORD_FILE"), where);
                assertNotNull(env.get("CSI_KAFKA_TRUSTSTORE"), where);
                String principal = user.replace("$(CSI_WORKER_NODE_ID)", KafkaUserManifests.ID);
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
