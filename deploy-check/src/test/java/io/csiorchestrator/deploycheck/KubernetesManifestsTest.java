package io.csiorchestrator.deploycheck;

import static io.csiorchestrator.deploycheck.Manifests.asList;
import static io.csiorchestrator.deploycheck.Manifests.byName;
import static io.csiorchestrator.deploycheck.Manifests.documents;
import static io.csiorchestrator.deploycheck.Manifests.env;
import static io.csiorchestrator.deploycheck.Manifests.get;
import static io.csiorchestrator.deploycheck.Manifests.isTrue;
import static io.csiorchestrator.deploycheck.Manifests.kubernetesDir;
import static io.csiorchestrator.deploycheck.Manifests.kubernetesObjects;
import static io.csiorchestrator.deploycheck.Manifests.map;
import static io.csiorchestrator.deploycheck.Manifests.maps;
import static io.csiorchestrator.deploycheck.Manifests.named;
import static io.csiorchestrator.deploycheck.Manifests.ofKind;
import static io.csiorchestrator.deploycheck.Manifests.string;
import static io.csiorchestrator.deploycheck.Manifests.yamlFilesUnder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import io.csiorchestrator.events.Topic;

class KubernetesManifestsTest {

    private static final String NAMESPACE = "csi-orchestrator";

    @Test
    void everyManifestParsesAndNamesItsObject() {
        List<Path> files = yamlFilesUnder(kubernetesDir());
        assertTrue(files.size() >= 6, "manifests under deploy/kubernetes: " + files);
        for (Path file : files) {
            for (Map<String, Object> object : documents(file)) {
                String where = file.getFileName() + ": " + object.get("kind") + " " + string(object, "metadata", "name");
                assertNotNull(object.get("apiVersion"), where + " has no apiVersion");
                assertNotNull(object.get("kind"), where + " has no kind");
                if (!"Kustomization".equals(object.get("kind"))) {
                    assertNotNull(string(object, "metadata", "name"), where + " has no metadata.name");
                    if (!"Namespace".equals(object.get("kind"))) {
                        assertEquals(NAMESPACE, string(object, "metadata", "namespace"), where + ": namespace");
                    }
                }
            }
        }
    }

    @Test
    void kustomizationListsEveryManifestButTheSecretTemplate() {
        Map<String, Object> kustomization = documents(kubernetesDir().resolve("kustomization.yaml")).get(0);
        assertEquals("Kustomization", kustomization.get("kind"));
        Set<String> listed = asList(get(kustomization, "resources"), "resources").stream()
                .map(Object::toString)
                .collect(Collectors.toCollection(TreeSet::new));
        Set<String> present = yamlFilesUnder(kubernetesDir()).stream()
                .map(p -> kubernetesDir().relativize(p).toString())
                .filter(name -> !name.equals("kustomization.yaml"))
                .filter(name -> !name.contains(".template."))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(present, listed, "kustomization.yaml resources vs the manifests in deploy/kubernetes");
        assertFalse(listed.stream().anyMatch(name -> name.contains("secret")),
                "the Secret template (placeholder keys) must not be applied by kustomize: " + listed);
    }

    @ParameterizedTest
    @EnumSource(Topic.class)
    void everyContractTopicHasAKafkaTopicWithItsPartitionsAndPolicy(Topic topic) {
        Map<String, Object> main = kafkaTopic(topic.baseName());
        assertEquals(topic.defaultPartitions(), get(main, "spec", "partitions"), topic.baseName() + " partitions");
        assertEquals(topic.compacted() ? "compact" : "delete", string(main, "spec", "config", "cleanup.policy"),
                topic.baseName() + " cleanup.policy");

        Map<String, Object> deadLetter = kafkaTopic(topic.baseName() + Topic.DEAD_LETTER_SUFFIX);
        assertEquals(topic.defaultPartitions(), get(deadLetter, "spec", "partitions"),
                topic.baseName() + " dead-letter partitions");
        assertEquals("delete", string(deadLetter, "spec", "config", "cleanup.policy"),
                "a dead-letter topic keeps every record: " + topic.baseName());
    }

    @Test
    void pluginStatusNodeStateNodeLeasesAndPlacementAreTheOnlyCompactedTopics() {
        Set<String> compacted = ofKind(kubernetesObjects(), "KafkaTopic").stream()
                .filter(t -> "compact".equals(string(t, "spec", "config", "cleanup.policy")))
                .map(t -> string(t, "spec", "topicName"))
                .collect(Collectors.toSet());
        assertEquals(Set.of(Topic.PLUGIN_STATUS.baseName(), Topic.NODE_STATE.baseName(), Topic.NODE_LEASES.baseName(),
                Topic.PLACEMENT.baseName()), compacted);
    }

    @Test
    void kafkaTopicsAreExactlyTheContractAndItsDeadLetters() {
        Set<String> expected = new TreeSet<>();
        for (Topic topic : Topic.values()) {
            expected.add(topic.baseName());
            expected.add(topic.baseName() + Topic.DEAD_LETTER_SUFFIX);
        }
        List<Map<String, Object>> topics = ofKind(kubernetesObjects(), "KafkaTopic");
        Set<String> names = new TreeSet<>();
        for (Map<String, Object> topic : topics) {
            assertEquals("kafka.strimzi.io/v1beta2", topic.get("apiVersion"));
            assertNotNull(string(topic, "metadata", "labels", "strimzi.io/cluster"), "strimzi.io/cluster label");
            assertTrue(names.add(string(topic, "spec", "topicName")), "duplicate " + string(topic, "spec", "topicName"));
        }
        assertEquals(expected, names);
    }

    @ParameterizedTest
    @ValueSource(strings = {"claim-service", "plugin-registry-service"})
    void centralServicesHaveProbesResourcesAndAService(String name) {
        List<Map<String, Object>> objects = kubernetesObjects();
        Map<String, Object> deployment = named(objects, "Deployment", name);
        Map<String, Object> container = byName(maps(deployment, "spec", "template", "spec", "containers"), name,
                "containers of " + name);
        assertEquals("/q/health/live", string(container, "livenessProbe", "httpGet", "path"));
        assertEquals("/q/health/ready", string(container, "readinessProbe", "httpGet", "path"));
        assertNotNull(string(container, "resources", "requests", "memory"), name + " memory request");
        assertNotNull(string(container, "resources", "limits", "memory"), name + " memory limit");
        assertFalse(isTrue(Manifests.at(container, "securityContext", "privileged").orElse(false)),
                name + " must not run privileged");
        assertEquals("QUARKUS_DATASOURCE_REACTIVE_URL", string(env(container, "QUARKUS_DATASOURCE_REACTIVE_URL"), "name"));
        assertEquals(map(deployment, "spec", "selector", "matchLabels"),
                map(deployment, "spec", "template", "metadata", "labels").entrySet().stream()
                        .filter(e -> map(deployment, "spec", "selector", "matchLabels").containsKey(e.getKey()))
                        .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)),
                name + ": selector matches the pod labels");

        Map<String, Object> service = named(objects, "Service", name);
        assertEquals(map(deployment, "spec", "selector", "matchLabels"), map(service, "spec", "selector"));
        Object containerPort = maps(container, "ports").get(0).get("containerPort");
        assertTrue(maps(service, "spec", "ports").stream().anyMatch(p -> containerPort.equals(p.get("port"))),
                name + " Service exposes " + containerPort);
    }

    /**
     * claim-service and plugin-registry-service run two replicas and roll one at a time with none unavailable: a
     * replica's death or rollout leaves the claims and the node leases (issue 19) with a live instance to take them
     * over before any worker's fence time.
     */
    @ParameterizedTest
    @ValueSource(strings = {"claim-service", "plugin-registry-service"})
    void centralServicesRunTwoReplicasAndRollWithNoneUnavailable(String name) {
        Map<String, Object> deployment = named(kubernetesObjects(), "Deployment", name);
        assertEquals(2, Manifests.at(deployment, "spec", "replicas").orElse(null), name + " replicas");
        assertEquals("RollingUpdate", string(deployment, "spec", "strategy", "type"), name + " strategy");
        assertEquals(0, Manifests.at(deployment, "spec", "strategy", "rollingUpdate", "maxUnavailable").orElse(null),
                name + " maxUnavailable");
    }

    @ParameterizedTest
    @ValueSource(strings = {"Deployment/claim-service", "Deployment/plugin-registry-service", "DaemonSet/node-mount-worker"})
    void everyServiceIsScrapedForPrometheusOnItsHttpPort(String kindAndName) {
        String[] parts = kindAndName.split("/");
        Map<String, Object> workload = named(kubernetesObjects(), parts[0], parts[1]);
        Map<String, Object> annotations = map(workload, "spec", "template", "metadata", "annotations");
        Map<String, Object> container = byName(maps(workload, "spec", "template", "spec", "containers"), parts[1],
                "containers of " + parts[1]);
        assertEquals("true", annotations.get("prometheus.io/scrape"), kindAndName);
        assertEquals("/q/metrics", annotations.get("prometheus.io/path"), kindAndName);
        assertEquals(String.valueOf(maps(container, "ports").get(0).get("containerPort")),
                annotations.get("prometheus.io/port"), kindAndName);
    }

    @Test
    void workerDaemonSetIsPrivilegedWithBidirectionalRootAndSharedPluginsDir() {
        Map<String, Object> daemonSet = named(kubernetesObjects(), "DaemonSet", "node-mount-worker");
        Map<String, Object> podSpec = map(daemonSet, "spec", "template", "spec");
        List<Map<String, Object>> containers = maps(podSpec, "containers");
        Map<String, Object> worker = byName(containers, "node-mount-worker", "DaemonSet containers");
        Map<String, Object> plugin = byName(containers, "hostpath-plugin", "DaemonSet containers");

        assertTrue(isTrue(get(worker, "securityContext", "privileged")), "worker privileged");
        assertTrue(isTrue(get(plugin, "securityContext", "privileged")), "plugin privileged");

        assertEquals("spec.nodeName", string(env(worker, "CSI_WORKER_NODE_ID"), "valueFrom", "fieldRef", "fieldPath"),
                "the node id comes from the downward API");

        String root = string(env(worker, "CSI_WORKER_ROOT"), "value");
        String pluginsDir = string(env(worker, "CSI_WORKER_PLUGINS_DIR"), "value");
        assertNotNull(root, "CSI_WORKER_ROOT");
        assertNotNull(pluginsDir, "CSI_WORKER_PLUGINS_DIR");

        Map<String, Object> workerRoot = mountAt(worker, root);
        assertEquals("Bidirectional", workerRoot.get("mountPropagation"), "worker root propagation");
        Map<String, Object> rootVolume = byName(maps(podSpec, "volumes"), workerRoot.get("name").toString(), "volumes");
        assertNotNull(string(rootVolume, "hostPath", "path"), "the worker root is a hostPath volume: " + rootVolume);

        Map<String, Object> pluginRoot = mountAt(plugin, root);
        assertEquals(workerRoot.get("name"), pluginRoot.get("name"), "the plugin mounts the same worker root");
        assertEquals("Bidirectional", pluginRoot.get("mountPropagation"), "plugin's worker root propagation");

        Map<String, Object> workerPlugins = mountAt(worker, pluginsDir);
        Map<String, Object> pluginPlugins = mountAt(plugin, pluginsDir);
        assertEquals(workerPlugins.get("name"), pluginPlugins.get("name"), "one plugins volume, shared");

        List<Object> args = asList(get(plugin, "args"), "plugin args");
        int endpoint = args.indexOf("--endpoint");
        assertTrue(endpoint >= 0 && endpoint + 1 < args.size(), "plugin --endpoint: " + args);
        assertTrue(args.get(endpoint + 1).toString().matches("unix://" + pluginsDir + "/[A-Za-z0-9][A-Za-z0-9._-]*/csi\\.sock"),
                "the plugin serves <plugins-dir>/<plugin-id>/csi.sock: " + args.get(endpoint + 1));
    }

    /** Issue 19: the worker DaemonSet holds node leases (stated, not left to the default). */
    @Test
    void workerDaemonSetHoldsANodeLease() {
        Map<String, Object> daemonSet = named(kubernetesObjects(), "DaemonSet", "node-mount-worker");
        Map<String, Object> worker = byName(maps(map(daemonSet, "spec", "template", "spec"), "containers"),
                "node-mount-worker", "DaemonSet containers");
        assertEquals("true", string(env(worker, "CSI_WORKER_FENCING_ENABLED"), "value"));
    }

    /**
     * Issue 20 item 4: no shared keyring anywhere (no container gets CSI_SECRETS_KEYRING or CSI_SECRETS_ACTIVE_KEY);
     * claim-service reads its own sealing keys from the file of Secret csi-claim-service-seal (never a literal), each
     * worker its node's from the node's own key directory (a hostPath, not a Secret shared by every node).
     */
    @Test
    void sealingKeysAreEachRecipientsOwnFileAndNoKeyringIsShared() {
        for (String kind : List.of("Deployment", "DaemonSet")) {
            for (Map<String, Object> workload : ofKind(kubernetesObjects(), kind)) {
                for (Map<String, Object> container : maps(workload, "spec", "template", "spec", "containers")) {
                    if (!(container.get("env") instanceof List<?>)) {
                        continue;
                    }
                    for (Map<String, Object> entry : maps(container, "env")) {
                        assertFalse(Set.of("CSI_SECRETS_KEYRING", "CSI_SECRETS_ACTIVE_KEY").contains(entry.get("name")),
                                "a shared keyring in " + container.get("name"));
                    }
                }
            }
        }
        Map<String, Object> claims = named(kubernetesObjects(), "Deployment", "claim-service");
        Map<String, Object> claimsPod = map(claims, "spec", "template", "spec");
        Map<String, Object> claimsContainer = byName(maps(claimsPod, "containers"), "claim-service", "containers");
        String claimsKey = string(env(claimsContainer, "CSI_SEAL_KEY_FILE"), "value");
        Map<String, Object> mount = maps(claimsContainer, "volumeMounts").stream()
                .filter(m -> claimsKey.startsWith(m.get("mountPath") + "/")).findFirst()
                .orElseThrow(() -> new AssertionError("claim-service's seal key file " + claimsKey + " is on no mount"));
        Map<String, Object> volume = byName(maps(claimsPod, "volumes"), mount.get("name").toString(), "volumes");
        assertEquals("csi-claim-service-seal", string(volume, "secret", "secretName"));

        Map<String, Object> workers = named(kubernetesObjects(), "DaemonSet", "node-mount-worker");
        Map<String, Object> workerPod = map(workers, "spec", "template", "spec");
        Map<String, Object> worker = byName(maps(workerPod, "containers"), "node-mount-worker", "containers");
        String nodeKey = string(env(worker, "CSI_SEAL_KEY_FILE"), "value");
        Map<String, Object> nodeMount = maps(worker, "volumeMounts").stream()
                .filter(m -> nodeKey.startsWith(m.get("mountPath") + "/")).findFirst()
                .orElseThrow(() -> new AssertionError("the worker's seal key file " + nodeKey + " is on no mount"));
        Map<String, Object> nodeVolume = byName(maps(workerPod, "volumes"), nodeMount.get("name").toString(), "volumes");
        assertTrue(nodeVolume.containsKey("hostPath") && !nodeVolume.containsKey("secret"),
                "a node's sealing key stays on the node, not in a Secret every node mounts: " + nodeVolume);
    }

    /**
     * Both REST services verify tokens with the key set of Secret csi-jwt-keys (jwks.json), mounted read-only where
     * CSI_JWT_PUBLIC_KEYS points, never a literal key (README "Security").
     */
    @ParameterizedTest
    @ValueSource(strings = {"claim-service", "plugin-registry-service"})
    void restTokenKeysComeFromTheSecretFile(String name) {
        Map<String, Object> spec = map(named(kubernetesObjects(), "Deployment", name), "spec", "template", "spec");
        Map<String, Object> container = byName(maps(spec, "containers"), name, "containers");
        String location = string(env(container, "CSI_JWT_PUBLIC_KEYS"), "value");
        assertEquals("/etc/csi/jwt/jwks.json", location, name);
        Map<String, Object> mount = mountAt(container, "/etc/csi/jwt");
        assertTrue(isTrue(mount.get("readOnly")), name + " mounts the keys read-only");
        Map<String, Object> volume = byName(maps(spec, "volumes"), mount.get("name").toString(), "volumes");
        assertEquals("csi-jwt-keys", string(volume, "secret", "secretName"), name);
    }

    private static Map<String, Object> kafkaTopic(String topicName) {
        List<Map<String, Object>> found = ofKind(kubernetesObjects(), "KafkaTopic").stream()
                .filter(t -> topicName.equals(string(t, "spec", "topicName")))
                .toList();
        assertEquals(1, found.size(), "exactly one KafkaTopic for " + topicName);
        return found.get(0);
    }

    private static Map<String, Object> mountAt(Map<String, Object> container, String path) {
        return maps(container, "volumeMounts").stream()
                .filter(m -> path.equals(m.get("mountPath")))
                .findFirst()
                .orElseThrow(() -> new AssertionError(container.get("name") + " mounts nothing at " + path));
    }
}
