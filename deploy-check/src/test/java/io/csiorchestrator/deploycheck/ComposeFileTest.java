package io.csiorchestrator.deploycheck;

import static io.csiorchestrator.deploycheck.Manifests.documents;
import static io.csiorchestrator.deploycheck.Manifests.get;
import static io.csiorchestrator.deploycheck.Manifests.isTrue;
import static io.csiorchestrator.deploycheck.Manifests.map;
import static io.csiorchestrator.deploycheck.Manifests.maps;
import static io.csiorchestrator.deploycheck.Manifests.read;
import static io.csiorchestrator.deploycheck.Manifests.root;
import static io.csiorchestrator.deploycheck.Manifests.string;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.Topic;

class ComposeFileTest {

    private static Map<String, Object> services() {
        List<Map<String, Object>> documents = documents(root().resolve("docker-compose.yml"));
        assertEquals(1, documents.size(), "docker-compose.yml is one document");
        return map(documents.get(0), "services");
    }

    private static Map<String, Object> service(String name) {
        return map(services(), name);
    }

    @Test
    void kafkaRunsKraftAndPostgresSixteenWithHealthChecks() {
        Map<String, Object> kafka = service("kafka");
        assertEquals("apache/kafka:4.1.1", kafka.get("image"));
        String start = read(root().resolve("deploy/compose/kafka-start.sh"));
        assertTrue(start.contains("process.roles=broker,controller"), "KRaft combined mode");
        assertTrue(start.contains("advertised.listeners=SASL_SSL://kafka:9092,"), "advertised on the compose network");
        assertNotNull(get(kafka, "healthcheck", "test"));

        Map<String, Object> postgres = service("postgres");
        assertTrue(postgres.get("image").toString().startsWith("postgres:16"), "PostgreSQL 16");
        assertNotNull(get(postgres, "healthcheck", "test"));
        assertTrue(Files.isRegularFile(root().resolve("deploy/compose/postgres-init.sh")));
    }

    @ParameterizedTest
    @ValueSource(strings = {"claim-service", "plugin-registry-service"})
    void servicesWaitForHealthyKafkaAndPostgres(String name) {
        Map<String, Object> service = service(name);
        assertEquals("service_healthy", string(service, "depends_on", "kafka", "condition"));
        assertEquals("service_healthy", string(service, "depends_on", "postgres", "condition"));
        assertEquals("deploy/docker/service.jvm.Dockerfile", string(service, "build", "dockerfile"));
        assertEquals(name, string(service, "build", "args", "MODULE"));
        assertTrue(string(service, "environment", "QUARKUS_DATASOURCE_REACTIVE_URL").startsWith("postgresql://postgres:5432/"));
        assertEquals("kafka:9092", string(service, "environment", "KAFKA_BOOTSTRAP_SERVERS"));
    }

    @Test
    void workerAndPluginArePrivilegedAndShareAnRsharedRootAndThePluginsDir() {
        Map<String, Object> worker = service("node-mount-worker");
        Map<String, Object> plugin = service("hostpath-plugin");
        assertTrue(isTrue(worker.get("privileged")), "worker privileged");
        assertTrue(isTrue(plugin.get("privileged")), "plugin privileged");
        assertEquals("service_healthy", string(worker, "depends_on", "kafka", "condition"));
        assertNotNull(string(worker, "environment", "CSI_WORKER_NODE_ID"), "CSI_WORKER_NODE_ID");

        String root = string(worker, "environment", "CSI_WORKER_ROOT");
        String pluginsDir = string(worker, "environment", "CSI_WORKER_PLUGINS_DIR");
        assertNotNull(root, "CSI_WORKER_ROOT");
        assertNotNull(pluginsDir, "CSI_WORKER_PLUGINS_DIR");

        Map<String, Object> workerRoot = volumeAt(worker, root);
        Map<String, Object> pluginRoot = volumeAt(plugin, root);
        for (Map<String, Object> mount : List.of(workerRoot, pluginRoot)) {
            assertEquals("bind", mount.get("type"), "the worker root is a host bind mount: " + mount);
            assertEquals("rshared", string(mount, "bind", "propagation"), "propagation of " + mount);
        }
        assertEquals(workerRoot.get("source"), pluginRoot.get("source"), "one host directory for both");

        Map<String, Object> workerPlugins = volumeAt(worker, pluginsDir);
        Map<String, Object> pluginPlugins = volumeAt(plugin, pluginsDir);
        assertEquals(workerPlugins.get("source"), pluginPlugins.get("source"), "one plugins dir for both");

        List<Object> command = Manifests.asList(plugin.get("command"), "hostpath-plugin command");
        int endpoint = command.indexOf("--endpoint");
        assertTrue(endpoint >= 0, "plugin --endpoint: " + command);
        assertTrue(command.get(endpoint + 1).toString().startsWith("unix://" + pluginsDir + "/"),
                "the plugin's socket is in the plugins dir: " + command);
        assertEquals(string(worker, "environment", "CSI_WORKER_NODE_ID"), command.get(command.indexOf("--node-id") + 1),
                "worker and plugin agree on the node id");
    }

    /**
     * Issue 19: the worker holds a node lease unless told otherwise ({@code CSI_WORKER_FENCING_ENABLED} defaults to
     * true), plugin-registry-service (which grants it) is in the file, and the three services that count the lease get
     * the same {@code CSI_FENCING_*} timers, since claim-service's fence wait is computed from what the registry grants
     * and the worker counts.
     */
    @Test
    void workerHoldsALeaseByDefaultAndEveryServiceCountsTheSameTimers() {
        assertEquals("${CSI_WORKER_FENCING_ENABLED:-true}",
                string(service("node-mount-worker"), "environment", "CSI_WORKER_FENCING_ENABLED"));
        assertNotNull(service("plugin-registry-service"), "the registry grants the leases");
        for (String timer : List.of("CSI_FENCING_LEASE_TTL", "CSI_FENCING_CLOCK_DRIFT", "CSI_FENCING_BUDGET",
                "CSI_FENCING_MARGIN")) {
            String worker = string(service("node-mount-worker"), "environment", timer);
            assertNotNull(worker, "node-mount-worker gets " + timer);
            for (String name : List.of("claim-service", "plugin-registry-service")) {
                assertEquals(worker, string(service(name), "environment", timer), name + "'s " + timer);
            }
        }
    }

    /**
     * Issue 20 item 4: claim-service and the worker each read their own sealing keys from a compose secret file
     * (CSI_SEAL_KEY_FILE under /run/secrets, listed in the service's secrets), never a value; no shared keyring.
     */
    @ParameterizedTest
    @ValueSource(strings = {"claim-service", "node-mount-worker"})
    void sealKeyIsTheServicesOwnSecretFileAndNoKeyringIsShared(String name) {
        assertNull(string(service(name), "environment", "CSI_SECRETS_KEYRING"), name + " gets no shared keyring");
        String file = string(service(name), "environment", "CSI_SEAL_KEY_FILE");
        assertNotNull(file, name + " gets CSI_SEAL_KEY_FILE");
        assertTrue(file.startsWith("/run/secrets/"), name + ": CSI_SEAL_KEY_FILE must be a secret file, is " + file);
        String target = file.substring("/run/secrets/".length());
        Object secrets = service(name).get("secrets");
        assertTrue(secrets instanceof List<?> list && list.stream().anyMatch(s -> s instanceof Map<?, ?> m
                && target.equals(m.get("target"))), name + " mounts the secret " + target + ": " + secrets);
    }

    @Test
    void topicScriptCreatesTheContractTopicsWithTheirPartitions() {
        String script = read(root().resolve("deploy/compose/create-topics.sh"));
        Matcher line = Pattern.compile("(?m)^topic\\s+(\\S+)\\s+(\\d+)(.*)$").matcher(script);
        Map<String, String> found = new HashMap<>();
        while (line.find()) {
            found.put(line.group(1), line.group(2) + "|" + line.group(3).trim());
        }
        assertEquals(Topic.values().length, found.size(), "topics in create-topics.sh: " + found.keySet());
        for (Topic topic : Topic.values()) {
            String entry = found.get(topic.baseName());
            assertNotNull(entry, topic.baseName() + " in create-topics.sh");
            String[] parts = entry.split("\\|", -1);
            assertEquals(String.valueOf(topic.defaultPartitions()), parts[0], topic.baseName() + " partitions");
            assertEquals(topic.compacted(), parts[1].contains("cleanup.policy=compact"), topic.baseName() + " compaction");
        }
        assertTrue(script.contains("-dead-letter"), "the script creates the dead-letter topics too");
        assertEquals("service_completed_successfully",
                string(service("claim-service"), "depends_on", "kafka-topics", "condition"));
    }

    /** deploy/compose/kafka-users.sh is what ComposeKafkaUsers renders from events-schema's KafkaAccess table. */
    @Test
    void kafkaUsersScriptIsRenderedFromTheAccessTable() {
        assertEquals(ComposeKafkaUsers.script(), read(root().resolve(ComposeKafkaUsers.FILE)),
                ComposeKafkaUsers.FILE + " drifted from KafkaAccess: run ComposeKafkaUsers.main");
    }

    /**
     * Issue 20 item 2: compose's broker is closed. Its start script declares only SASL_SSL client listeners, an SSL
     * client-certificate listener and an SSL controller listener, both with client certificates required, the StandardAuthorizer with no access without an ACL and
     * only the broker and csi-admin as super users; no compose file or script says PLAINTEXT.
     */
    @Test
    void kafkaListensOnlyWithTlsAndTheAuthorizerDeniesByDefault() {
        String start = read(root().resolve("deploy/compose/kafka-start.sh"));
        Map<String, String> settings = new HashMap<>();
        Matcher line = Pattern.compile("(?m)^([a-z0-9._-]+)=(.*)$").matcher(start);
        while (line.find()) {
            settings.put(line.group(1), line.group(2));
        }
        Map<String, String> protocols = new HashMap<>();
        for (String entry : settings.getOrDefault("listener.security.protocol.map", "").split(",")) {
            String[] pair = entry.split(":");
            protocols.put(pair[0], pair.length > 1 ? pair[1] : "");
        }
        String listeners = settings.get("listeners");
        assertNotNull(listeners, "kafka-start.sh sets listeners");
        for (String listener : listeners.split(",")) {
            String name = listener.substring(0, listener.indexOf(':'));
            String protocol = protocols.get(name);
            assertEquals(name.equals("CONTROLLER") || name.equals("SSL") ? "SSL" : "SASL_SSL", protocol,
                    "protocol of listener " + name);
        }
        assertEquals("required", settings.get("listener.name.controller.ssl.client.auth"), "controller mTLS");
        // the client-certificate listener (issue 33 item 1): a certificate of kafka-init's client CA only, CN = principal
        assertEquals("required", settings.get("listener.name.ssl.ssl.client.auth"), "client certificates required");
        assertEquals("$SECRETS/client-ca.pem", settings.get("listener.name.ssl.ssl.truststore.location"),
                "the SSL listener trusts the client CA alone");
        assertEquals("RULE:^CN=([^,]+)\\$/\\$1/,DEFAULT", settings.get("ssl.principal.mapping.rules"));
        assertEquals("SCRAM-SHA-512", settings.get("sasl.enabled.mechanisms").replace("$MECHANISM", "SCRAM-SHA-512"));
        assertEquals("org.apache.kafka.metadata.authorizer.StandardAuthorizer", settings.get("authorizer.class.name"));
        assertEquals("false", settings.get("allow.everyone.if.no.acl.found"));
        assertEquals(KafkaAccess.superUsers(), settings.get("super.users"));
        assertEquals("false", settings.get("auto.create.topics.enable"));
        assertTrue(Long.parseLong(settings.get("connections.max.reauth.ms")) > 0, "revoked credentials' connections end");
        assertEquals(List.of("/bin/sh", "/deploy/kafka-start.sh"), service("kafka").get("entrypoint"));

        List<Path> files = new ArrayList<>(List.of(root().resolve("docker-compose.yml")));
        files.addAll(Manifests.filesUnder(root().resolve("deploy/compose")));
        for (Path file : files) {
            assertFalse(read(file).contains("PLAINTEXT"), file + " mentions PLAINTEXT");
        }
    }

    /**
     * Every service that talks to Kafka authenticates as its own principal, one that kafka-users.sh issues with quotas
     * and ACLs: the services (SASL_SSL) with a SCRAM credential and their password file on the volume kafka-init fills
     * for each alone, the worker (SSL, on the broker's client-certificate listener) with no password and no token but
     * the certificate and key kafka-init makes for the same node id in its volume (issue 33 item 1; a token only when
     * asked for, CSI_KAFKA_NODE_LOGIN=token); and no ACL of the script is a wildcard or grants more than Read, Write or
     * Create.
     */
    @Test
    void everyKafkaClientIsItsOwnPrincipalWithAclsAndNoWildcard() {
        String users = read(root().resolve(ComposeKafkaUsers.FILE));
        Map<String, Integer> acls = new HashMap<>();
        Set<String> tokenLogins = new TreeSet<>();
        Matcher credential = Pattern.compile("(?m)^(credential|no_password) \"([^\"]+)\"$").matcher(users);
        while (credential.find()) {
            acls.put(credential.group(2), 0);
            if (credential.group(1).equals("no_password")) {
                tokenLogins.add(credential.group(2));
            }
        }
        assertEquals(Set.of("node-$NODE_ID"), tokenLogins, "only the node logs in without a password (with a certificate)");
        Set<String> withQuotas = new TreeSet<>();
        Matcher quotas = Pattern.compile("(?m)^quotas \"([^\"]+)\" \\d+ \\d+ \\d+$").matcher(users);
        while (quotas.find()) {
            withQuotas.add(quotas.group(1));
        }
        assertEquals(new TreeSet<>(acls.keySet()), withQuotas, "every principal has quotas");
        Matcher allow = Pattern.compile("(?m)^allow \"([^\"]+)\" (\\w+) (topic|group) \"([^\"]*)\" (literal|prefixed)$")
                .matcher(users);
        while (allow.find()) {
            String principal = allow.group(1);
            assertTrue(acls.containsKey(principal), "an ACL for " + principal + ", which has no credential");
            assertTrue(Set.of("Read", "Write", "Create").contains(allow.group(2)), allow.group());
            assertFalse(allow.group(4).isEmpty() || allow.group(4).contains("*"), "wildcard ACL: " + allow.group());
            acls.merge(principal, 1, Integer::sum);
        }
        assertEquals(users.lines().filter(l -> l.startsWith("allow ")).count(),
                acls.values().stream().mapToInt(Integer::intValue).sum(), "every allow line is well-formed");
        acls.forEach((principal, count) -> assertTrue(count > 0, principal + " has no ACL"));

        Set<String> clients = new TreeSet<>();
        services().forEach((name, definition) -> {
            Map<String, Object> service = Manifests.asMap(definition, name);
            if (Manifests.at(service, "environment", "KAFKA_BOOTSTRAP_SERVERS").isEmpty()) {
                return;
            }
            if (name.equals("kafka-topics")) { // the admin: its client settings are kafka-setup.sh's --command-config
                assertEquals(List.of("/bin/sh", "/deploy/kafka-setup.sh"), service.get("entrypoint"));
                return;
            }
            clients.add(name);
            String user = string(service, "environment", "CSI_KAFKA_USERNAME");
            if (name.equals("node-mount-worker")) {
                // node-<id> logs in with the certificate kafka-init makes for the same id in this worker's volume
                assertEquals("SSL", string(service, "environment", "CSI_KAFKA_SECURITY_PROTOCOL"), name);
                assertEquals("kafka:9094", string(service, "environment", "KAFKA_BOOTSTRAP_SERVERS"),
                        "the worker uses the client-certificate listener");
                assertTrue(read(root().resolve("deploy/compose/kafka-start.sh")).contains("SSL://kafka:9094"),
                        "kafka-start.sh advertises the client-certificate listener");
                assertNull(user, "the worker logs in with its node's certificate, not as a user with a password");
                assertNull(string(service, "environment", "CSI_KAFKA_PASSWORD_FILE"), "the worker has no Kafka password");
                assertNull(string(service, "environment", "CSI_KAFKA_TOKEN_FILE"), "the worker logs in without a token");
                assertEquals("/etc/csi/kafka/node.pem", string(service, "environment", "CSI_KAFKA_CERTIFICATE_FILE"));
                assertEquals("/etc/csi/kafka/node.key", string(service, "environment", "CSI_KAFKA_KEY_FILE"));
                Map<String, Object> init = service("kafka-init");
                assertEquals(string(service, "environment", "CSI_WORKER_NODE_ID"), string(init, "environment", "CSI_NODE_ID"),
                        "the certificate is made for the worker's node");
                Map<String, Object> setup = service("kafka-topics");
                assertEquals(string(service, "environment", "CSI_WORKER_NODE_ID"), string(setup, "environment", "CSI_NODE_ID"),
                        "the node's ACLs (and a token, if asked for) are for the worker's node");
                assertEquals("${CSI_KAFKA_NODE_LOGIN:-certificate}", string(setup, "environment", "CSI_KAFKA_NODE_LOGIN"),
                        "kafka-topics issues no token by default");
                assertTrue(read(root().resolve("deploy/compose/kafka-setup.sh"))
                        .contains("/bin/sh /deploy/kafka-node-token.sh \"${CSI_NODE_ID:-node-1}\""),
                        "kafka-setup.sh can still issue the node's token");
                String volume = String.valueOf(volumeAt(service, "/etc/csi/kafka").get("source"));
                assertTrue(Manifests.asList(init.get("volumes"), "kafka-init volumes").contains(volume + ":/out/node"),
                        "kafka-init writes the certificate into the worker's volume " + volume);
                assertTrue(Manifests.asList(setup.get("volumes"), "kafka-topics volumes").contains(volume + ":/out/node"),
                        "kafka-topics can write a token into the worker's volume " + volume);
                assertTrue(Manifests.asList(setup.get("volumes"), "kafka-topics volumes")
                        .contains("./deploy/compose/kafka-node-token.sh:/deploy/kafka-node-token.sh:ro"));
                assertTrue(tokenLogins.contains("node-$NODE_ID"), "kafka-users.sh issues node-$NODE_ID without a password");
                assertTrue(Manifests.asList(service("kafka").get("volumes"), "kafka volumes")
                        .contains("./deploy/compose/kafka-drop-acls.sh:/deploy/kafka-drop-acls.sh:ro"),
                        "the broker's container has the revocation script (deploy/README.md)");
            } else {
                assertNotNull(user, name + " has no CSI_KAFKA_USERNAME: it would connect unauthenticated");
                String principal = user.replace("${CSI_NODE_ID:-node-1}", "$NODE_ID");
                assertEquals("SASL_SSL", string(service, "environment", "CSI_KAFKA_SECURITY_PROTOCOL"), name);
                assertTrue(acls.containsKey(principal) && !tokenLogins.contains(principal), name + " authenticates as "
                        + user + ", whom kafka-users.sh does not issue a credential: " + acls.keySet());
                assertEquals("/etc/csi/kafka/password", string(service, "environment", "CSI_KAFKA_PASSWORD_FILE"), name);
            }
            assertEquals("/etc/csi/kafka/ca.pem", string(service, "environment", "CSI_KAFKA_TRUSTSTORE"), name);
            Map<String, Object> mount = volumeAt(service, "/etc/csi/kafka");
            assertEquals("volume", mount.get("type"), name + ": " + mount);
            assertTrue(isTrue(mount.get("read_only")), name + " mounts its Kafka credential read-only");
            String volume = String.valueOf(mount.get("source"));
            assertTrue(Manifests.asList(service("kafka-init").get("volumes"), "kafka-init volumes").stream()
                    .anyMatch(v -> v.toString().startsWith(volume + ":/out/")), volume + " is filled by kafka-init");
        });
        assertEquals(Set.of("claim-service", "plugin-registry-service", "node-mount-worker"), clients);
    }

    private static Map<String, Object> volumeAt(Map<String, Object> service, String target) {
        return maps(service, "volumes").stream()
                .filter(v -> target.equals(v.get("target")))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no long-syntax volume at " + target + " in " + service));
    }
}
