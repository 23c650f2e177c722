#!/bin/sh
# The one-shot `kafka-topics` container (apache/kafka image, as root to read kafka-init's material): as csi-admin,
# creates the contract topics (create-topics.sh), then issues every principal of docker-compose: its ACLs and quotas,
# each service's SCRAM credential (kafka-users.sh, rendered from events-schema's KafkaAccess). The node logs in with the
# client certificate kafka-init made (issue 33 item 1); only with CSI_KAFKA_NODE_LOGIN=token does this also write the
# node's delegation token into the worker's credential volume (kafka-node-token.sh: kept while it lives long enough,
# else issued anew), for a worker set to use it (deploy/README.md). Idempotent.
set -eu
umask 077
MATERIAL="${CSI_KAFKA_MATERIAL:-/material}"
CONFIG=/tmp/csi-admin.properties
admin_password="$(tr -d '\n' < "$MATERIAL/admin.password")"
cat > "$CONFIG" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="csi-admin" password="$admin_password";
ssl.truststore.type=PEM
ssl.truststore.location=$MATERIAL/ca.pem
PROPS
export KAFKA_COMMAND_CONFIG="$CONFIG"
export CSI_KAFKA_MATERIAL="$MATERIAL"
/bin/sh /deploy/create-topics.sh
/bin/sh /deploy/kafka-users.sh "${CSI_NODE_ID:-node-1}"
case "${CSI_KAFKA_NODE_LOGIN:-certificate}" in
  certificate)
    echo "kafka-topics: topics and principals issued (the node logs in with its certificate)" ;;
  token)
    /bin/sh /deploy/kafka-node-token.sh "${CSI_NODE_ID:-node-1}"
    echo "kafka-topics: topics, principals and the node's token issued" ;;
  *) echo "kafka-topics: CSI_KAFKA_NODE_LOGIN is certificate or token, not '$CSI_KAFKA_NODE_LOGIN'" >&2; exit 2 ;;
esac
