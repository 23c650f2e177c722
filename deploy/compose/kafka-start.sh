#!/bin/sh
# The `kafka` container's entrypoint (apache/kafka image, as its user appuser): a single KRaft node run CLOSED
# (README "Security"; the same settings as the local and test broker, local-infra's BrokerSecurity):
#   - client listeners SASL_SSL only, SCRAM-SHA-512: kafka:9092 on the compose network, localhost:29092 for the host;
#   - the client-certificate listener SSL, kafka:9094 on the compose network (the nodes' login, issue 33 item 1):
#     ssl.client.auth=required, trusting only kafka-init's client CA (client-ca.pem, not the broker's CA); the
#     certificate's CN is the principal (CN=node-node-1 is User:node-node-1, ssl.principal.mapping.rules), so the
#     ACLs of kafka-users.sh apply unchanged. Kafka checks no revocation list: on compose a certificate is revoked by
#     dropping its principal's ACLs as csi-admin (deploy/README.md);
#   - the KRaft controller listener SSL with client certificates required (only the broker's own key gets in);
#   - the StandardAuthorizer, allow.everyone.if.no.acl.found=false, super users the broker and csi-admin only;
#   - connections.max.reauth.ms 60 s: an open connection of a deleted (revoked) credential ends within a minute;
#   - no topic made by a client's metadata request;
#   - delegation tokens (the expiring credentials of nodes and schedulers: ./csi kafka-credential), signed with
#     token-secret.key, living at most 365 days, expired ones dropped every 30 s.
# Its key material comes from kafka-init ($SECRETS). The broker's and csi-admin's SCRAM credentials are written
# when the storage is formatted (first start); kafka-topics issues every other principal as csi-admin.
set -eu
umask 077
SECRETS="${CSI_KAFKA_SECRETS:-/etc/csi/kafka}"
CONF_DIR="${CSI_KAFKA_CONF_DIR:-/tmp/csi-kafka}"
DATA="${KAFKA_LOG_DIRS:-/var/lib/kafka/data}"
CLUSTER_ID="${CLUSTER_ID:?CLUSTER_ID}"
MECHANISM=SCRAM-SHA-512

read_secret() {
  tr -d '\n' < "$SECRETS/$1"
}
jaas() {
  printf 'org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";' "$1" "$2"
}

broker_password="$(read_secret broker.password)"
admin_password="$(read_secret admin.password)"
store_password="$(read_secret broker.p12.password)"
token_secret="$(read_secret token-secret.key)"
mkdir -p "$CONF_DIR"
cat > "$CONF_DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@kafka:9093
controller.listener.names=CONTROLLER
listeners=SASL_SSL://:9092,CONTROLLER://:9093,HOST://:29092,SSL://:9094
advertised.listeners=SASL_SSL://kafka:9092,HOST://localhost:29092,SSL://kafka:9094
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SSL,HOST:SASL_SSL,SSL:SSL
inter.broker.listener.name=SASL_SSL
sasl.enabled.mechanisms=$MECHANISM
sasl.mechanism.inter.broker.protocol=$MECHANISM
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$(jaas csi-kafka-broker "$broker_password")
listener.name.host.scram-sha-512.sasl.jaas.config=$(jaas csi-kafka-broker "$broker_password")
ssl.keystore.type=PKCS12
ssl.keystore.location=$SECRETS/broker.p12
ssl.keystore.password=$store_password
ssl.key.password=$store_password
ssl.truststore.type=PEM
ssl.truststore.location=$SECRETS/ca.pem
listener.name.controller.ssl.client.auth=required
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.truststore.type=PEM
listener.name.ssl.ssl.truststore.location=$SECRETS/client-ca.pem
ssl.principal.mapping.rules=RULE:^CN=([^,]+)\$/\$1/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:csi-kafka-broker;User:csi-admin
connections.max.reauth.ms=60000
auto.create.topics.enable=false
delegation.token.secret.key=$token_secret
delegation.token.max.lifetime.ms=31536000000
delegation.token.expiry.time.ms=31536000000
delegation.token.expiry.check.interval.ms=30000
log.dirs=$DATA
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS

# the admin's client settings: this container's health check, and what kafka-topics writes for itself
cat > "$CONF_DIR/admin.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=$MECHANISM
sasl.jaas.config=$(jaas csi-admin "$admin_password")
ssl.truststore.type=PEM
ssl.truststore.location=$SECRETS/ca.pem
PROPS

# CSI_KAFKA_CONFIG_ONLY=1: stop here (deploy-check's ComposeKafkaBrokerTest runs a broker with these settings)
[ "${CSI_KAFKA_CONFIG_ONLY:-0}" = 1 ] && exit 0
/opt/kafka/bin/kafka-storage.sh format --ignore-formatted --cluster-id "$CLUSTER_ID" --config "$CONF_DIR/server.properties" \
  --add-scram "$MECHANISM=[name=csi-kafka-broker,password=$broker_password]" \
  --add-scram "$MECHANISM=[name=csi-admin,password=$admin_password]"
exec /opt/kafka/bin/kafka-server-start.sh "$CONF_DIR/server.properties"
