#!/bin/sh
# One-shot `kafka-init` container (the apache/kafka image, as root), before the broker starts: the closed broker's
# key material and one SCRAM password per service principal (README "Security"), made ONCE with the image's own tools
# (keytool, /dev/urandom) in the host directory mounted at $MATERIAL (default .csi/compose/kafka), then copied into
# one volume per container, owned by the user that container runs as, so each one reads only its own password (the
# worker's volume gets no password: its node logs in with a TLS client certificate made here, issue 33 item 1):
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
#   $MATERIAL/client-ca.pem (+ .key)      the client CA (openssl, RSA 2048, 10 years; its own, not the broker's CA):
#                                         the broker's SSL listener (kafka:9094) trusts only it
#   $MATERIAL/clients/node-<id>.pem/.key  the node's certificate (CN=node-<CSI_NODE_ID>, the principal, then the
#                                         client CA) and its key (unencrypted PKCS#8 PEM), living
#                                         CSI_KAFKA_NODE_CERT_TTL (whole days: 30d by default, at most 365d); made
#                                         anew when missing, for another CN, or with a third of that lifetime or less
#                                         left (then restart the worker)
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
CERT_TTL="${CSI_KAFKA_NODE_CERT_TTL:-30d}"
KEYTOOL="${JAVA_HOME:+$JAVA_HOME/bin/}keytool"

case "$NODE_ID" in
  ''|*[!A-Za-z0-9._-]*|.*) echo "kafka-init: CSI_NODE_ID '$NODE_ID' is not a safe id" >&2; exit 2 ;;
esac
# whole days only: openssl x509 -days sets the lifetime
cert_days="${CERT_TTL%d}"
case "$CERT_TTL" in
  *d) ;;
  *) cert_days="" ;;
esac
case "$cert_days" in
  ''|*[!0-9]*|0*) echo "kafka-init: CSI_KAFKA_NODE_CERT_TTL takes whole days like 30d, not '$CERT_TTL'" >&2; exit 2 ;;
esac
if [ "$cert_days" -gt 365 ]; then
  echo "kafka-init: CSI_KAFKA_NODE_CERT_TTL must be at most 365d, not '$CERT_TTL'" >&2
  exit 2
fi

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

# the client CA (the broker's SSL listener trusts it alone) and the node's certificate under it
if [ ! -s "$MATERIAL/client-ca.pem" ] || [ ! -s "$MATERIAL/client-ca.key" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$MATERIAL/client-ca.key.tmp" -out "$MATERIAL/client-ca.pem.tmp" \
    -subj "/CN=csi-orchestrator kafka client CA" -days 3650 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  mv "$MATERIAL/client-ca.key.tmp" "$MATERIAL/client-ca.key"
  chmod 644 "$MATERIAL/client-ca.pem.tmp"
  mv "$MATERIAL/client-ca.pem.tmp" "$MATERIAL/client-ca.pem"
  rm -f "$MATERIAL/clients/node-$NODE_ID.pem"  # one of an earlier client CA is trusted no more
fi
NODE_CERT="$MATERIAL/clients/node-$NODE_ID.pem"
NODE_KEY="$MATERIAL/clients/node-$NODE_ID.key"
reason=""
if [ ! -s "$NODE_CERT" ] || [ ! -s "$NODE_KEY" ]; then
  reason="no certificate of node-$NODE_ID"
elif [ "$(openssl x509 -in "$NODE_CERT" -noout -subject -nameopt RFC2253)" != "subject=CN=node-$NODE_ID" ]; then
  reason="$NODE_CERT is not node-$NODE_ID's"
elif ! openssl x509 -in "$NODE_CERT" -noout -checkend $((cert_days * 86400 / 3)) > /dev/null; then
  reason="node-$NODE_ID's certificate has a third of $CERT_TTL or less left"
fi
if [ -n "$reason" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/node.key" 2>/dev/null
  openssl req -new -key "$work/node.key" -subj "/CN=node-$NODE_ID" -out "$work/node.csr"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' \
    > "$work/ext"
  # a random 128-bit serial
  openssl x509 -req -in "$work/node.csr" -CA "$MATERIAL/client-ca.pem" -CAkey "$MATERIAL/client-ca.key" \
    -set_serial "0x$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" -days "$cert_days" -extfile "$work/ext" \
    -out "$work/node.crt" 2>/dev/null
  cat "$work/node.crt" "$MATERIAL/client-ca.pem" > "$work/node.pem"
  mv "$work/node.key" "$NODE_KEY"
  mv "$work/node.pem" "$NODE_CERT"
  echo "kafka-init: issued node-$NODE_ID's certificate for $CERT_TTL ($reason)"
fi
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
  "$MATERIAL/broker.password" "$MATERIAL/admin.password" "$MATERIAL/token-secret.key" "$MATERIAL/client-ca.pem"
# a service's volume holds `password` (its principal's only) and ca.pem: CSI_KAFKA_PASSWORD_FILE, CSI_KAFKA_TRUSTSTORE
client() {
  dir="$OUT/$1"; [ -d "$dir" ] || return 0
  cp "$MATERIAL/clients/$2.password" "$dir/password"
  copy "$dir" "$3"
}
client claim-service claim-service "$SERVICE_UID"
client plugin-registry-service plugin-registry-service "$SERVICE_UID"
# the worker's: its certificate node.pem and key node.key (CSI_KAFKA_CERTIFICATE_FILE, CSI_KAFKA_KEY_FILE) and ca.pem
# (CSI_KAFKA_TRUSTSTORE); a `token` only if kafka-topics is asked for one (CSI_KAFKA_NODE_LOGIN=token)
if [ -d "$OUT/node" ]; then
  rm -f "$OUT/node/password"
  copy "$OUT/node" "$WORKER_UID" "$NODE_CERT" "$NODE_KEY"
  mv "$OUT/node/node-$NODE_ID.pem" "$OUT/node/node.pem"
  mv "$OUT/node/node-$NODE_ID.key" "$OUT/node/node.key"
fi
echo "kafka-init: material in $MATERIAL, node principal node-$NODE_ID (its certificate: node.pem)"
