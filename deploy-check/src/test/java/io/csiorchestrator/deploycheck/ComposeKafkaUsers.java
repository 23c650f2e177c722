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
 * Renders {@code deploy/compose/kafka-users.sh} from {@link KafkaAccess}: the script docker-compose's one-shot
 * {@code kafka-topics} container runs as {@value KafkaAccess#ADMIN} to issue compose's principals (claim-service,
 * plugin-registry-service, the node's worker, csi-operator for the host's CLI): each one's ACLs and quotas, and the
 * SCRAM-SHA-512 credential of each but the node, which logs in with the expiring client certificate kafka-init made
 * (or, opted in, a delegation token of {@code deploy/compose/kafka-node-token.sh}; README "Security"). {@code ComposeFileTest} fails when the file differs from what this renders; {@code main}
 * rewrites it after the table changes: {@code java -cp ... io.csiorchestrator.deploycheck.ComposeKafkaUsers <root>}.
 */
final class ComposeKafkaUsers {

    static final String FILE = "deploy/compose/kafka-users.sh";
    /** Rendered in place of the node id, then replaced by the script's {@code $NODE_ID}. */
    private static final String NODE_PLACEHOLDER = "csi-compose-node-placeholder";

    private ComposeKafkaUsers() {
    }

    /** compose's principals: the two services, its one node (id from the script's argument), the host's CLI. */
    static List<Principal> principals() {
        return List.of(Principal.claimService(), Principal.pluginRegistry(), Principal.node(NODE_PLACEHOLDER),
            Principal.operator());
    }

    static String script() {
        StringBuilder out = new StringBuilder("""
            #!/bin/sh
            # GENERATED from events-schema's KafkaAccess (the one table of Kafka rights) by deploy-check's
            # ComposeKafkaUsers; ComposeFileTest fails if it drifts. Run by the one-shot kafka-topics container as
            # csi-admin: issues docker-compose's principals on the closed broker, each with its ACLs (never a
            # wildcard, nothing without one) and its quotas; the services and csi-operator with their SCRAM-SHA-512
            # credential (the password kafka-init made in $CSI_KAFKA_MATERIAL/clients/<principal>.password), the node
            # with none: it logs in with a client certificate (kafka-init's) or a token. Idempotent. Names assume
            # no csi.topics.prefix. Usage: kafka-users.sh <node id>
            set -eu
            BOOTSTRAP="${KAFKA_BOOTSTRAP_SERVERS:-kafka:9092}"
            CONFIG="${KAFKA_COMMAND_CONFIG:?the admin client settings}"
            MATERIAL="${CSI_KAFKA_MATERIAL:-/material}"
            NODE_ID="${1:?node id}"
            case "$NODE_ID" in
              ''|*[!A-Za-z0-9._-]*|.*) echo "kafka-users: node id '$NODE_ID' is not a safe id" >&2; exit 2 ;;
            esac

            # principal: its SCRAM-SHA-512 credential
            credential() {
              password="$(tr -d '\\n' < "$MATERIAL/clients/$1.password")"
              /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --alter \\
                --entity-type users --entity-name "$1" --add-config "SCRAM-SHA-512=[iterations=4096,password=$password]"
            }

            # principal: no SCRAM credential (a certificate's or a token's login); one an earlier version made is deleted
            no_password() {
              if /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --describe \\
                  --entity-type users --entity-name "$1" | grep -q 'SCRAM-SHA-512='; then
                /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --alter \\
                  --entity-type users --entity-name "$1" --delete-config SCRAM-SHA-512
              fi
            }

            # principal producer-bytes/s consumer-bytes/s request-percentage
            quotas() {
              /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --alter \\
                --entity-type users --entity-name "$1" \\
                --add-config "producer_byte_rate=$2,consumer_byte_rate=$3,request_percentage=$4"
            }

            # principal operation topic|group name literal|prefixed
            allow() {
              /opt/kafka/bin/kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --add \\
                --allow-principal "User:$1" --allow-host '*' --operation "$2" "--$3" "$4" --resource-pattern-type "$5"
            }
            """);
        for (Principal principal : principals()) {
            out.append(render(principal));
        }
        return out.toString().replace(NODE_PLACEHOLDER, "$NODE_ID");
    }

    private static String render(Principal principal) {
        KafkaAccess.Quota quota = KafkaAccess.quota(principal.role());
        String name = '"' + principal.name() + '"';
        StringBuilder out = new StringBuilder("\n# ").append(principal.name()).append('\n')
            .append(KafkaUserManifests.tokenLogin(principal) ? "no_password " : "credential ").append(name).append('\n')
            .append("quotas ").append(name).append(' ').append(quota.producerByteRate()).append(' ')
            .append(quota.consumerByteRate()).append(' ').append(quota.requestPercentage()).append('\n');
        for (Grant grant : KafkaAccess.grants(principal, TopicCatalog.unprefixed())) {
            out.append("allow ").append(name).append(' ').append(pascal(grant.operation().name())).append(' ')
                .append(grant.type().name().toLowerCase(Locale.ROOT)).append(" \"").append(grant.name()).append("\" ")
                .append(grant.pattern() == PatternType.PREFIXED ? "prefixed" : "literal").append('\n');
        }
        return out.toString();
    }

    private static String pascal(String operation) {
        return operation.charAt(0) + operation.substring(1).toLowerCase(Locale.ROOT);
    }

    public static void main(String[] args) throws IOException {
        Files.writeString(Path.of(args.length > 0 ? args[0] : ".").resolve(FILE), script());
    }
}
