#!/bin/sh
# One-shot `kafka-init` container (the apache/kafka image, as root), before the broker starts: the closed broker's
# key material and one SCRAM password per service principal (README "Security"), made ONCE with the image's own tools
# (keytool, /dev/urandom) in the host directory mounted at $MATERIAL (default .csi/compose/kafka), then copied into
# one volume per container, owned by the user that container runs as, so each one reads only its own password (the
# worker's volume gets the CA only: its node logs in with a delegation token that kafka-topics writes there once the
# broker is up, deploy/compose/kafka-node-token.sh):
#
#   $MATERIAL/ca.pem                      the CA certificate every client trusts (its key is never kept: nobody can
#                                         issue another certificate under it)
#   $MATERIAL/broker.p12 (+ .password)    the broker's key and certificate, CN=csi-kafka-broker, names kafka and
#                                         localhost (host tools connect to localhost:29092)
#   $MATERIAL/broker.password             the broker's own SCRAM user (inter-broker)
#   $MATERIAL/admin.password              csi-admin, the super user kafka-topics issues the others with
#   $MATERIAL/token-secret.key            the key the broker signs delegation tokens with (expiring credentials of
#                                         nodes and schedulers: ./csi kafka-credential)
#   $MATERIAL/clients/<principal>.password  claim-service, plugin-registry-service, csi-operator (no node password:
#                                         one made by an earlier version is deleted)
#
# Every secret is 0600 and owned by the owner of $MATERIAL (the host user who made .csi/compose), so
# ./csi on the host can use csi-operator's. Idempotent: what exists is kept (delete $MATERIAL to start afresh, together
# with the kafka-data volume: the broker's and admin's credentials are written when its storage is formatted).
set -eu
umask 077
MATERIAL="${CSI_KAFKA_MATERIAL:-/material}"
OUT="${CSI_KAFKA_OUT:-/out}"
NODE_ID="${CSI_NODE_ID:-node-1}"
KAFKA_UID="${CSI_KAFKA_UID:-$(id -u appuser 2>/dev/null || echo 1000)}"  # the user the kafka image runs as
SERVICE_UID="${CSI_SERVICE_UID:-185}"
WORKER_UID="${CSI_WORKER_UID:-0}"
KEYTOOL="${JAVA_HOME:+$JAVA_HOME/bin/}keytool"

case "$NODE_ID" in
  ''|*[!A-Za-z0-9._-]*|.*) echo "kafka-init: CSI_NODE_ID '$NODE_ID' is not a safe id" >&2; exit 2 ;;
esac

password() {
  head -c 24 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'
}

# $1 file: a new password in it unless it exists
secret() {
  [ -s "$1" ] || { password > "$1.tmp"; echo >> "$1.tmp"; mv "$1.tmp" "$1"; }
}

mkdir -p "$MATERIAL/clients"
owner="$(stat -c %u:%g "$MATERIAL")"

if [ ! -s "$MATERIAL/ca.pem" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  capass="$(password)"
  storepass="$(password)"
  "$KEYTOOL" -genkeypair -noprompt -keystore "$work/ca.p12" -storetype PKCS12 -storepass "$capass" -alias ca \
    -dname "CN=csi-orchestrator kafka CA" -keyalg RSA -keysize 2048 -validity 3650 -ext bc:c
  rm -f "$MATERIAL/broker.p12"
  "$KEYTOOL" -genkeypair -noprompt -keystore "$MATERIAL/broker.p12" -storetype PKCS12 -storepass "$storepass" \
    -alias broker -dname "CN=csi-kafka-broker" -keyalg RSA -keysize 2048 -validity 825
  "$KEYTOOL" -certreq -keystore "$MATERIAL/broker.p12" -storepass "$storepass" -alias broker -file "$work/broker.csr"
  "$KEYTOOL" -gencert -keystore "$work/ca.p12" -storepass "$capass" -alias ca -infile "$work/broker.csr" \
    -outfile "$work/broker.crt" -rfc -validity 825 -ext "san=dns:kafka,dns:localhost,ip:127.0.0.1" \
    -ext "eku=serverAuth,clientAuth" -ext "ku:c=digitalSignature,keyEncipherment"
  "$KEYTOOL" -exportcert -keystore "$work/ca.p12" -storepass "$capass" -alias ca -rfc -file "$work/ca.pem"
  "$KEYTOOL" -importcert -noprompt -keystore "$MATERIAL/broker.p12" -storepass "$storepass" -alias ca \
    -file "$work/ca.pem"
  "$KEYTOOL" -importcert -noprompt -keystore "$MATERIAL/broker.p12" -storepass "$storepass" -alias broker \
    -file "$work/broker.crt"
  printf '%s\n' "$storepass" > "$MATERIAL/broker.p12.password"
  rm -f "$MATERIAL/broker.password" "$MATERIAL/admin.password"
  secret "$MATERIAL/broker.password"
  secret "$MATERIAL/admin.password"
  # last: its presence means the rest is there
  cp "$work/ca.pem" "$MATERIAL/ca.pem.tmp"
  chmod 644 "$MATERIAL/ca.pem.tmp"
  mv "$MATERIAL/ca.pem.tmp" "$MATERIAL/ca.pem"
fi

# outside the block above, so material made before delegation tokens gains the key
secret "$MATERIAL/token-secret.key"

for principal in claim-service plugin-registry-service csi-operator; do
  secret "$MATERIAL/clients/$principal.password"
done
rm -f "$MATERIAL/clients/node-$NODE_ID.password"
chown -R "$owner" "$MATERIAL"

# $1 volume directory, $2 owner uid, then the files to copy into it
copy() {
  dir="$1"; uid="$2"; shift 2
  [ -d "$dir" ] || return 0
  for file in "$@"; do
    cp "$file" "$dir/$(basename "$file")"
  done
  cp "$MATERIAL/ca.pem" "$dir/ca.pem"
  chown -R "$uid:$uid" "$dir"
  chmod 600 "$dir"/*
  chmod 644 "$dir/ca.pem"
  chmod 755 "$dir"
}

copy "$OUT/broker" "$KAFKA_UID" "$MATERIAL/broker.p12" "$MATERIAL/broker.p12.password" \
  "$MATERIAL/broker.password" "$MATERIAL/admin.password" "$MATERIAL/token-secret.key"
# a service's volume holds `password` (its principal's only) and ca.pem: CSI_KAFKA_PASSWORD_FILE, CSI_KAFKA_TRUSTSTORE
client() {
  dir="$OUT/$1"; [ -d "$dir" ] || return 0
  cp "$MATERIAL/clients/$2.password" "$dir/password"
  copy "$dir" "$3"
}
client claim-service claim-service "$SERVICE_UID"
client plugin-registry-service plugin-registry-service "$SERVICE_UID"
# the worker's: ca.pem only (CSI_KAFKA_TRUSTSTORE); its `token` (CSI_KAFKA_TOKEN_FILE) comes from kafka-topics
if [ -d "$OUT/node" ]; then
  rm -f "$OUT/node/password"
  copy "$OUT/node" "$WORKER_UID"
fi
echo "kafka-init: material in $MATERIAL, node principal node-$NODE_ID (its token: kafka-topics)"
