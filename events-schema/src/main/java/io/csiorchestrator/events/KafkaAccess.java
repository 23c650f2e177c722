package io.csiorchestrator.events;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * Who may do what on the broker: THE one table of Kafka rights, from which the test broker, {@code ./csi up},
 * docker-compose's ACL script and the Strimzi KafkaUsers are all made (and which deploy-check holds them to).
 * The broker runs the KRaft {@code StandardAuthorizer} with {@code allow.everyone.if.no.acl.found=false}: a
 * principal may do exactly what its role's rows grant, nothing else; only the broker itself and
 * {@value #ADMIN} are super users.
 *
 * <table>
 *   <caption>the roles (principal {@code User:<name>})</caption>
 *   <tr><th>role</th><th>principal</th><th>reads (topic, group)</th><th>writes</th></tr>
 *   <tr><td>claim-service</td><td>{@code claim-service}</td><td>claim-requested, mount-done, plugin-status,
 *       node-events, node-state, node-leases, claim-status (its status feed); groups {@code claim-service} and
 *       {@code claim-service-*}</td>
 *       <td>claim-status, node-commands, node-events (repairs), its inputs' dead letters; creates the contract's
 *       topics</td></tr>
 *   <tr><td>plugin-registry</td><td>{@code plugin-registry-service}</td><td>plugin-health, node-lease-requests,
 *       node-events (FENCED reports); groups {@code plugin-registry-service} and
 *       {@code plugin-registry-service-*}</td><td>plugin-status, node-leases, its inputs' dead letters;
 *       creates its topics</td></tr>
 *   <tr><td>node</td><td>{@code node-<id>}</td><td>node-commands, node-leases; group
 *       {@code node-mount-worker-<id>}</td><td>mount-done, plugin-health, node-events, node-state,
 *       node-lease-requests, node-commands-dead-letter</td></tr>
 *   <tr><td>scheduler</td><td>{@code scheduler-<id>}</td><td>claim-status; groups {@code scheduler-<id>-*}</td>
 *       <td>claim-requested</td></tr>
 *   <tr><td>operator (CLI: {@code volume claim}, {@code events}, {@code chaos})</td><td>{@value #OPERATOR}</td>
 *       <td>claim-status, node-events, plugin-status, node-leases (assigned partitions, no group)</td><td>claim-requested</td></tr>
 *   <tr><td>bench (CLI {@code bench})</td><td>{@value #BENCH}</td><td>the operator's, plus node-commands and
 *       mount-done to time each step (sealed secrets stay sealed: it has no key); its probe topic {@code bench-probe}</td>
 *       <td>claim-requested, bench-probe (which it creates)</td></tr>
 *   <tr><td>node simulator (load tests only)</td><td>{@value #SIMULATOR}</td><td>a node's, for every node:
 *       groups {@code node-mount-worker-*}</td><td>a node's</td></tr>
 * </table>
 *
 * <p>Kafka has no partition-level ACL: a node's principal may write {@code mount-done} about another node and read
 * other nodes' commands' partitions. That node restriction is the consumers' job (signed records, issue 20 item 3);
 * here a node may never write {@code claim-requested} or {@code node-commands} nor read another principal's group.
 * No row is a wildcard ({@code *}); a prefix row is always longer than the role's own name.
 */
public final class KafkaAccess {

    /** The operators' and tools' super user (creates topics, credentials and ACLs). */
    public static final String ADMIN = "csi-admin";
    /** The broker's own principal (inter-broker and controller connections); a super user. */
    public static final String BROKER = "csi-kafka-broker";
    public static final String CLAIM_SERVICE = "claim-service";
    public static final String PLUGIN_REGISTRY = "plugin-registry-service";
    public static final String OPERATOR = "csi-operator";
    public static final String BENCH = "csi-bench";
    public static final String SIMULATOR = "node-simulator";
    /** {@code ./csi bench}'s Kafka round-trip probe topic (after the topic prefix). */
    public static final String BENCH_PROBE_TOPIC = "bench-probe";
    /** The consumer group of node {@code <id>}'s worker is {@code NODE_GROUP_PREFIX + <id>}. */
    public static final String NODE_GROUP_PREFIX = "node-mount-worker-";
    /**
     * Ends every prefix ACL: a principal's prefix {@code <name>-} covers its own groups ({@code scheduler-acme-...})
     * and not those of a principal whose name extends its own ({@code scheduler-acme2-...}).
     */
    public static final String GROUP_SEPARATOR = "-";

    /** A kind of principal; each gets the rows of {@link #grants}. */
    public enum Role { CLAIM_SERVICE, PLUGIN_REGISTRY, NODE, SCHEDULER, OPERATOR, BENCH, SIMULATOR }

    /** One right: {@code operation} on the resource {@code (type, pattern, name)}. */
    public record Grant(ResourceType type, PatternType pattern, String name, AclOperation operation) {
        public Grant {
            Objects.requireNonNull(type);
            Objects.requireNonNull(pattern);
            Objects.requireNonNull(operation);
            if (name == null || name.isEmpty() || name.equals(ResourcePattern.WILDCARD_RESOURCE)) {
                throw new IllegalArgumentException("no wildcard rights: " + name);
            }
        }

        /** The ACL binding allowing {@code principal} this right from any host. */
        public AclBinding binding(String principal) {
            return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry("User:" + principal, "*", operation, AclPermissionType.ALLOW));
        }
    }

    /** A principal and its role; {@code id} is the node or scheduler id (empty for the others). */
    public record Principal(Role role, String name, String id) {
        public Principal {
            Objects.requireNonNull(role);
            Objects.requireNonNull(name);
            Objects.requireNonNull(id);
        }

        public static Principal claimService() {
            return new Principal(Role.CLAIM_SERVICE, CLAIM_SERVICE, "");
        }

        public static Principal pluginRegistry() {
            return new Principal(Role.PLUGIN_REGISTRY, PLUGIN_REGISTRY, "");
        }

        /** Node {@code nodeId}'s worker: principal {@code node-<nodeId>}. */
        public static Principal node(String nodeId) {
            PathSafeId.require("node id", nodeId);
            return new Principal(Role.NODE, "node-" + nodeId, nodeId);
        }

        /** Upstream scheduler {@code schedulerId}: principal {@code scheduler-<schedulerId>}. */
        public static Principal scheduler(String schedulerId) {
            PathSafeId.require("scheduler id", schedulerId);
            return new Principal(Role.SCHEDULER, "scheduler-" + schedulerId, schedulerId);
        }

        public static Principal operator() {
            return new Principal(Role.OPERATOR, OPERATOR, "");
        }

        public static Principal bench() {
            return new Principal(Role.BENCH, BENCH, "");
        }

        public static Principal simulator() {
            return new Principal(Role.SIMULATOR, SIMULATOR, "");
        }
    }

    private KafkaAccess() {
    }

    /** Every right of {@code principal} on the topics of {@code topics}, in table order. */
    public static List<Grant> grants(Principal principal, TopicCatalog topics) {
        Rows rows = new Rows(topics);
        switch (principal.role()) {
            case CLAIM_SERVICE -> {
                rows.consume(Topic.CLAIM_REQUESTED, Topic.MOUNT_DONE, Topic.PLUGIN_STATUS, Topic.NODE_EVENTS,
                    Topic.NODE_STATE, Topic.NODE_LEASES);
                rows.read(Topic.CLAIM_STATUS); // the status page's feed
                rows.write(Topic.CLAIM_STATUS, Topic.NODE_COMMANDS, Topic.NODE_EVENTS, Topic.VOLUME_STATUS, Topic.PLACEMENT);
                // it provisions the whole contract where topics are not managed elsewhere (csi.topics.create)
                rows.create(Topic.values());
                rows.group(CLAIM_SERVICE);
                rows.groupPrefix(CLAIM_SERVICE + GROUP_SEPARATOR);
            }
            case PLUGIN_REGISTRY -> {
                rows.consume(Topic.PLUGIN_HEALTH, Topic.NODE_LEASE_REQUESTS);
                rows.read(Topic.NODE_EVENTS); // a worker's FENCED report fences its lease epoch
                rows.write(Topic.PLUGIN_STATUS, Topic.NODE_LEASES);
                rows.create(Topic.PLUGIN_HEALTH, Topic.PLUGIN_STATUS, Topic.NODE_LEASE_REQUESTS, Topic.NODE_LEASES);
                rows.group(PLUGIN_REGISTRY);
                rows.groupPrefix(PLUGIN_REGISTRY + GROUP_SEPARATOR);
            }
            case NODE -> {
                rows.consume(Topic.NODE_COMMANDS);
                rows.read(Topic.NODE_LEASES);
                rows.write(Topic.MOUNT_DONE, Topic.PLUGIN_HEALTH, Topic.NODE_EVENTS, Topic.NODE_STATE,
                    Topic.NODE_LEASE_REQUESTS);
                rows.group(NODE_GROUP_PREFIX + principal.id());
            }
            case SCHEDULER -> {
                rows.write(Topic.CLAIM_REQUESTED);
                rows.read(Topic.CLAIM_STATUS, Topic.VOLUME_STATUS); // volume-status: create/delete results (issue 14)
                rows.read(Topic.PLACEMENT); // where a volume can go: limits, topology, capacity (issue 34)
                // with the separator: scheduler acme's prefix must not cover scheduler acme2's groups (issue 33)
                rows.groupPrefix(principal.name() + GROUP_SEPARATOR);
            }
            case OPERATOR -> {
                rows.write(Topic.CLAIM_REQUESTED);
                // node-leases: ./csi chaos checks the registry's grants and lapses (issue 19)
                // volume-status: ./csi events shows the results of creates and deletes (issue 14)
                // placement: ./csi node status shows what schedulers see (issue 34)
                rows.read(Topic.CLAIM_STATUS, Topic.NODE_EVENTS, Topic.PLUGIN_STATUS, Topic.NODE_LEASES, Topic.VOLUME_STATUS,
                        Topic.PLACEMENT);
            }
            case BENCH -> {
                rows.write(Topic.CLAIM_REQUESTED);
                rows.read(Topic.CLAIM_STATUS, Topic.NODE_EVENTS, Topic.PLUGIN_STATUS, Topic.NODE_COMMANDS,
                    Topic.MOUNT_DONE);
                // its own round-trip probe topic
                rows.topic(topics.prefix() + BENCH_PROBE_TOPIC, AclOperation.CREATE);
                rows.topic(topics.prefix() + BENCH_PROBE_TOPIC, AclOperation.WRITE);
                rows.topic(topics.prefix() + BENCH_PROBE_TOPIC, AclOperation.READ);
            }
            case SIMULATOR -> {
                rows.consume(Topic.NODE_COMMANDS);
                rows.read(Topic.NODE_LEASES);
                rows.write(Topic.MOUNT_DONE, Topic.PLUGIN_HEALTH, Topic.NODE_EVENTS, Topic.NODE_STATE,
                    Topic.NODE_LEASE_REQUESTS);
                rows.groupPrefix(NODE_GROUP_PREFIX);
            }
            default -> throw new IllegalStateException("no rows for " + principal.role());
        }
        return List.copyOf(rows.grants);
    }

    /**
     * A principal's broker quotas (Strimzi KafkaUser {@code quotas}): bytes per second it may produce and fetch, and
     * the share of a broker's request threads it may hold, so one principal (e.g. a flooding node) cannot starve the
     * others.
     */
    public record Quota(long producerByteRate, long consumerByteRate, int requestPercentage) {
    }

    private static final long MIB = 1024 * 1024;

    /** The quotas of {@code role}. */
    public static Quota quota(Role role) {
        return switch (role) {
            case CLAIM_SERVICE -> new Quota(10 * MIB, 20 * MIB, 50);
            case PLUGIN_REGISTRY -> new Quota(5 * MIB, 10 * MIB, 25);
            case NODE -> new Quota(MIB, 2 * MIB, 10);
            case SCHEDULER -> new Quota(2 * MIB, 4 * MIB, 20);
            case OPERATOR -> new Quota(MIB, 4 * MIB, 10);
            case BENCH, SIMULATOR -> new Quota(10 * MIB, 20 * MIB, 50);
        };
    }

    /** The ACL bindings of {@code principal}: one per {@link Grant}. */
    public static List<AclBinding> bindings(Principal principal, TopicCatalog topics) {
        return grants(principal, topics).stream().map(g -> g.binding(principal.name())).toList();
    }

    /** The fixed principals of an installation (no nodes or schedulers: those are added as they join). */
    public static List<Principal> services() {
        return List.of(Principal.claimService(), Principal.pluginRegistry(), Principal.operator(), Principal.bench());
    }

    /** The broker's {@code super.users} value: the broker itself and {@value #ADMIN}. */
    public static String superUsers() {
        return "User:" + BROKER + ";User:" + ADMIN;
    }

    /** Accumulates a role's rows. */
    private static final class Rows {
        private final TopicCatalog topics;
        private final List<Grant> grants = new ArrayList<>();

        Rows(TopicCatalog topics) {
            this.topics = topics;
        }

        /** Read (and so Describe) of each topic, and Write of its dead-letter topic: what a consumer needs. */
        void consume(Topic... consumed) {
            for (Topic topic : consumed) {
                topic(topics.name(topic), AclOperation.READ);
                topic(topics.deadLetterName(topic), AclOperation.WRITE);
            }
        }

        void read(Topic... read) {
            for (Topic topic : read) {
                topic(topics.name(topic), AclOperation.READ);
            }
        }

        void write(Topic... written) {
            for (Topic topic : written) {
                topic(topics.name(topic), AclOperation.WRITE);
            }
        }

        /** Create of each topic and its dead-letter topic (the services provision the topics they own). */
        void create(Topic... created) {
            for (Topic topic : created) {
                topic(topics.name(topic), AclOperation.CREATE);
                topic(topics.deadLetterName(topic), AclOperation.CREATE);
            }
        }

        void group(String name) {
            add(new Grant(ResourceType.GROUP, PatternType.LITERAL, name, AclOperation.READ));
        }

        void groupPrefix(String prefix) {
            add(new Grant(ResourceType.GROUP, PatternType.PREFIXED, prefix, AclOperation.READ));
        }

        private void topic(String name, AclOperation operation) {
            add(new Grant(ResourceType.TOPIC, PatternType.LITERAL, name, operation));
        }

        private void add(Grant grant) {
            if (!grants.contains(grant)) {
                grants.add(grant);
            }
        }
    }

    /** The operations a grant table may contain; deploy-check refuses any other (e.g. ALL, ALTER). */
    public static final Set<AclOperation> OPERATIONS = EnumSet.of(AclOperation.READ, AclOperation.WRITE,
        AclOperation.CREATE);
}
