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
  password="$(tr -d '\n' < "$MATERIAL/clients/$1.password")"
  /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --alter \
    --entity-type users --entity-name "$1" --add-config "SCRAM-SHA-512=[iterations=4096,password=$password]"
}

# principal: no SCRAM credential (a certificate's or a token's login); one an earlier version made is deleted
no_password() {
  if /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --describe \
      --entity-type users --entity-name "$1" | grep -q 'SCRAM-SHA-512='; then
    /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --alter \
      --entity-type users --entity-name "$1" --delete-config SCRAM-SHA-512
  fi
}

# principal producer-bytes/s consumer-bytes/s request-percentage
quotas() {
  /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --alter \
    --entity-type users --entity-name "$1" \
    --add-config "producer_byte_rate=$2,consumer_byte_rate=$3,request_percentage=$4"
}

# principal operation topic|group name literal|prefixed
allow() {
  /opt/kafka/bin/kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --add \
    --allow-principal "User:$1" --allow-host '*' --operation "$2" "--$3" "$4" --resource-pattern-type "$5"
}

# claim-service
credential "claim-service"
quotas "claim-service" 10485760 20971520 50
allow "claim-service" Read topic "claim-requested" literal
allow "claim-service" Write topic "claim-requested-dead-letter" literal
allow "claim-service" Read topic "mount-done" literal
allow "claim-service" Write topic "mount-done-dead-letter" literal
allow "claim-service" Read topic "plugin-status" literal
allow "claim-service" Write topic "plugin-status-dead-letter" literal
allow "claim-service" Read topic "node-events" literal
allow "claim-service" Write topic "node-events-dead-letter" literal
allow "claim-service" Read topic "node-state" literal
allow "claim-service" Write topic "node-state-dead-letter" literal
allow "claim-service" Read topic "node-leases" literal
allow "claim-service" Write topic "node-leases-dead-letter" literal
allow "claim-service" Read topic "claim-status" literal
allow "claim-service" Write topic "claim-status" literal
allow "claim-service" Write topic "node-commands" literal
allow "claim-service" Write topic "node-events" literal
allow "claim-service" Write topic "volume-status" literal
allow "claim-service" Write topic "placement" literal
allow "claim-service" Create topic "claim-requested" literal
allow "claim-service" Create topic "claim-requested-dead-letter" literal
allow "claim-service" Create topic "claim-status" literal
allow "claim-service" Create topic "claim-status-dead-letter" literal
allow "claim-service" Create topic "node-commands" literal
allow "claim-service" Create topic "node-commands-dead-letter" literal
allow "claim-service" Create topic "mount-done" literal
allow "claim-service" Create topic "mount-done-dead-letter" literal
allow "claim-service" Create topic "plugin-health" literal
allow "claim-service" Create topic "plugin-health-dead-letter" literal
allow "claim-service" Create topic "plugin-status" literal
allow "claim-service" Create topic "plugin-status-dead-letter" literal
allow "claim-service" Create topic "node-events" literal
allow "claim-service" Create topic "node-events-dead-letter" literal
allow "claim-service" Create topic "node-state" literal
allow "claim-service" Create topic "node-state-dead-letter" literal
allow "claim-service" Create topic "node-lease-requests" literal
allow "claim-service" Create topic "node-lease-requests-dead-letter" literal
allow "claim-service" Create topic "node-leases" literal
allow "claim-service" Create topic "node-leases-dead-letter" literal
allow "claim-service" Create topic "volume-status" literal
allow "claim-service" Create topic "volume-status-dead-letter" literal
allow "claim-service" Create topic "placement" literal
allow "claim-service" Create topic "placement-dead-letter" literal
allow "claim-service" Read group "claim-service" literal
allow "claim-service" Read group "claim-service-" prefixed

# plugin-registry-service
credential "plugin-registry-service"
quotas "plugin-registry-service" 5242880 10485760 25
allow "plugin-registry-service" Read topic "plugin-health" literal
allow "plugin-registry-service" Write topic "plugin-health-dead-letter" literal
allow "plugin-registry-service" Read topic "node-lease-requests" literal
allow "plugin-registry-service" Write topic "node-lease-requests-dead-letter" literal
allow "plugin-registry-service" Read topic "node-events" literal
allow "plugin-registry-service" Write topic "plugin-status" literal
allow "plugin-registry-service" Write topic "node-leases" literal
allow "plugin-registry-service" Create topic "plugin-health" literal
allow "plugin-registry-service" Create topic "plugin-health-dead-letter" literal
allow "plugin-registry-service" Create topic "plugin-status" literal
allow "plugin-registry-service" Create topic "plugin-status-dead-letter" literal
allow "plugin-registry-service" Create topic "node-lease-requests" literal
allow "plugin-registry-service" Create topic "node-lease-requests-dead-letter" literal
allow "plugin-registry-service" Create topic "node-leases" literal
allow "plugin-registry-service" Create topic "node-leases-dead-letter" literal
allow "plugin-registry-service" Read group "plugin-registry-service" literal
allow "plugin-registry-service" Read group "plugin-registry-service-" prefixed

# node-$NODE_ID
no_password "node-$NODE_ID"
quotas "node-$NODE_ID" 1048576 2097152 10
allow "node-$NODE_ID" Read topic "node-commands" literal
allow "node-$NODE_ID" Write topic "node-commands-dead-letter" literal
allow "node-$NODE_ID" Read topic "node-leases" literal
allow "node-$NODE_ID" Write topic "mount-done" literal
allow "node-$NODE_ID" Write topic "plugin-health" literal
allow "node-$NODE_ID" Write topic "node-events" literal
allow "node-$NODE_ID" Write topic "node-state" literal
allow "node-$NODE_ID" Write topic "node-lease-requests" literal
allow "node-$NODE_ID" Read group "node-mount-worker-$NODE_ID" literal

# csi-operator
credential "csi-operator"
quotas "csi-operator" 1048576 4194304 10
allow "csi-operator" Write topic "claim-requested" literal
allow "csi-operator" Read topic "claim-status" literal
allow "csi-operator" Read topic "node-events" literal
allow "csi-operator" Read topic "plugin-status" literal
allow "csi-operator" Read topic "node-leases" literal
allow "csi-operator" Read topic "volume-status" literal
allow "csi-operator" Read topic "placement" literal
