package io.csiorchestrator.deploycheck;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

import org.apache.kafka.common.resource.PatternType;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaAccess.Grant;
import io.csiorchestrator.events.KafkaAccess.Principal;
import io.csiorchestrator.events.TopicCatalog;

/**
 * Renders Strimzi {@code KafkaUser}s (simple ACLs, quotas) from {@link KafkaAccess}: the text of
 * {@code deploy/kubernetes/kafka-users.yaml} (the services and the operator, with a SCRAM-SHA-512 password the User
 * Operator makes) and of the node and scheduler templates ({@code authentication: tls}: the User Operator issues and
 * renews their client certificates; README "Security", issue 33). {@code KafkaSecurityManifestsTest}
 * fails when a file differs from what this renders; {@code main} rewrites them after the table changes:
 * {@code java -cp ... io.csiorchestrator.deploycheck.KafkaUserManifests <repository root>}.
 */
final class KafkaUserManifests {

    static final String CLUSTER = "csi-kafka";
    static final String NAMESPACE = "csi-orchestrator";
    static final String USERS_FILE = "kafka-users.yaml";
    static final String NODE_TEMPLATE = "kafka-user-node.template.yaml";
    static final String SCHEDULER_TEMPLATE = "kafka-user-scheduler.template.yaml";
    /** The placeholder of the templates: replace it with the node's or scheduler's id. */
    static final String ID = "ID";

    private KafkaUserManifests() {
    }

    /** The fixed principals of a Kubernetes installation (the CLI's bench and the simulator are not deployed there). */
    static List<Principal> deployed() {
        return List.of(Principal.claimService(), Principal.pluginRegistry(), Principal.operator());
    }

    static String usersFile() {
        StringBuilder out = new StringBuilder("""
            # GENERATED from events-schema's KafkaAccess (the one table of Kafka rights) by deploy-check's
            # KafkaUserManifests; KafkaSecurityManifestsTest fails if it drifts. One Strimzi KafkaUser per service
            # principal: SCRAM-SHA-512 (the User Operator writes the password into the Secret of the same name),
            # simple ACLs (never a wildcard), quotas. Nodes and schedulers: the .template.yaml files, one per id.
            # Names assume no csi.topics.prefix.
            """);
        for (Principal principal : deployed()) {
            out.append(render(principal));
        }
        return out.toString();
    }

    static String template(Principal principal, String what) {
        String kind = principal.role() == KafkaAccess.Role.NODE ? "node" : "scheduler";
        return "# GENERATED from events-schema's KafkaAccess by deploy-check's KafkaUserManifests. The KafkaUser of one "
            + what + ":\n# replace " + ID + " with its id (e.g. sed s/" + ID + "/worker-7/g) and apply it when it joins."
            + " No password:\n# " + principal.name() + " logs in with a TLS client certificate the User Operator issues"
            + " and renews (Secret " + principal.name() + ": user.crt,\n# user.key; principal CN=" + principal.name()
            + ", issue 33; deploy/README.md). Revoke: delete this KafkaUser (its ACLs: open\n# connections refused at"
            + " once) and do not re-create it under the same name before its certificate expired.\n"
            + render(principal);
    }

    /**
     * Nodes and schedulers log in with expiring credentials, no password: on Kubernetes a TLS client certificate
     * (KafkaUser {@code authentication: tls}, issue 33), in compose a delegation token.
     */
    static boolean tokenLogin(Principal principal) {
        return principal.role() == KafkaAccess.Role.NODE || principal.role() == KafkaAccess.Role.SCHEDULER;
    }

    static String render(Principal principal) {
        KafkaAccess.Quota quota = KafkaAccess.quota(principal.role());
        StringBuilder out = new StringBuilder();
        out.append("---\n")
            .append("apiVersion: kafka.strimzi.io/v1beta2\n")
            .append("kind: KafkaUser\n")
            .append("metadata:\n")
            .append("  name: ").append(principal.name()).append('\n')
            .append("  namespace: ").append(NAMESPACE).append('\n')
            .append("  labels:\n")
            .append("    strimzi.io/cluster: ").append(CLUSTER).append('\n')
            .append("    app.kubernetes.io/part-of: csi-orchestrator\n")
            .append("spec:\n");
        out.append("  authentication:\n")
            .append(tokenLogin(principal) ? "    type: tls\n" : "    type: scram-sha-512\n");
        out.append("  authorization:\n")
            .append("    type: simple\n")
            .append("    acls:\n");
        for (Grant grant : KafkaAccess.grants(principal, TopicCatalog.unprefixed())) {
            out.append("      - resource:\n")
                .append("          type: ").append(grant.type().name().toLowerCase(Locale.ROOT)).append('\n')
                .append("          name: ").append(grant.name()).append('\n')
                .append("          patternType: ").append(grant.pattern() == PatternType.PREFIXED ? "prefix" : "literal").append('\n')
                .append("        operations: [").append(strimzi(grant.operation().name())).append("]\n")
                .append("        host: \"*\"\n");
        }
        out.append("  quotas:\n")
            .append("    producerByteRate: ").append(quota.producerByteRate()).append('\n')
            .append("    consumerByteRate: ").append(quota.consumerByteRate()).append('\n')
            .append("    requestPercentage: ").append(quota.requestPercentage()).append('\n');
        return out.toString();
    }

    private static String strimzi(String operation) {
        return operation.charAt(0) + operation.substring(1).toLowerCase(Locale.ROOT);
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args.length > 0 ? args[0] : ".").resolve("deploy/kubernetes");
        Files.writeString(dir.resolve(USERS_FILE), usersFile());
        Files.writeString(dir.resolve(NODE_TEMPLATE), template(Principal.node(ID), "node"));
        Files.writeString(dir.resolve(SCHEDULER_TEMPLATE), template(Principal.scheduler(ID), "upstream scheduler"));
    }
}
