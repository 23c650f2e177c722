#!/bin/sh
# Revokes a compose principal's rights (deploy/README.md "revoke"): drops every ACL of User:<principal> with the
# image's kafka-acls.sh, as csi-admin. The broker's authorizer then refuses each request of that principal at once, on
# open and new connections. Compose's stock broker checks no revoked-certificate list, so a revoked node certificate
# still completes the TLS handshake until it expires, and the next kafka-topics run (every `docker compose up`) grants
# the principal its ACLs again: re-issue under a new node id. Run in the kafka container (its admin settings):
#
#   docker compose exec kafka sh /deploy/kafka-drop-acls.sh node-<CSI_NODE_ID>
set -eu
BOOTSTRAP="${KAFKA_BOOTSTRAP_SERVERS:-kafka:9092}"
CONFIG="${KAFKA_COMMAND_CONFIG:-/tmp/csi-kafka/admin.properties}"
KAFKA_BIN="${KAFKA_BIN:-/opt/kafka/bin}"
PRINCIPAL="${1:-}"
case "$PRINCIPAL" in
  ''|*[!A-Za-z0-9._-]*|.*) echo "kafka-drop-acls: principal '$PRINCIPAL' is not a safe name (e.g. node-node-1)" >&2
    exit 2 ;;
esac
case "$PRINCIPAL" in
  csi-admin|csi-kafka-broker) echo "kafka-drop-acls: $PRINCIPAL is a super user: ACLs do not bind it" >&2; exit 2 ;;
esac

acls() {
  "$KAFKA_BIN/kafka-acls.sh" --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" "$@"
}

# the listing: a line per resource, `ResourcePattern(resourceType=TOPIC, name=mount-done, patternType=LITERAL)`,
# then a line per entry, `(principal=User:node-node-1, host=*, operation=WRITE, permissionType=ALLOW)`; printed as
# TYPE NAME PATTERN HOST OPERATION PERMISSION, one line per entry of this principal
entries=$(acls --list --principal "User:$PRINCIPAL" | awk -v who="User:$PRINCIPAL" '
  function fields(text,   n, i, part, k) {
    split("", value)
    sub(/^[^(]*\(/, "", text); sub(/\).*$/, "", text)
    n = split(text, part, ", ")
    for (i = 1; i <= n; i++) { k = index(part[i], "="); value[substr(part[i], 1, k - 1)] = substr(part[i], k + 1) }
  }
  /ResourcePattern\(/ { fields($0); type = value["resourceType"]; name = value["name"]; pattern = value["patternType"]; next }
  /\(principal=/ {
    fields($0)
    if (value["principal"] == who) print type, name, pattern, value["host"], value["operation"], value["permissionType"]
  }')

dropped=0
while read -r type name pattern host operation permission; do
  [ -n "$type" ] || continue
  case "$type" in
    TOPIC) resource="--topic" ;;
    GROUP) resource="--group" ;;
    TRANSACTIONAL_ID) resource="--transactional-id" ;;
    CLUSTER) resource="--cluster" ;;
    *) echo "kafka-drop-acls: cannot drop an ACL on a $type resource ($name): drop it by hand" >&2; exit 1 ;;
  esac
  case "$permission" in
    ALLOW) who="--allow-principal"; where="--allow-host" ;;
    DENY) who="--deny-principal"; where="--deny-host" ;;
    *) echo "kafka-drop-acls: unknown permission '$permission'" >&2; exit 1 ;;
  esac
  pattern_type=$(printf '%s' "$pattern" | tr 'A-Z' 'a-z')
  if [ "$type" = CLUSTER ]; then
    acls --remove --force "$who" "User:$PRINCIPAL" "$where" "$host" --operation "$operation" --cluster > /dev/null
  else
    acls --remove --force "$who" "User:$PRINCIPAL" "$where" "$host" --operation "$operation" "$resource" "$name" \
      --resource-pattern-type "$pattern_type" > /dev/null
  fi
  dropped=$((dropped + 1))
done <<EOF
$entries
EOF

left=$(acls --list --principal "User:$PRINCIPAL" | grep -c "principal=User:$PRINCIPAL," || true)
if [ "$left" -ne 0 ]; then
  echo "kafka-drop-acls: $left ACL(s) of User:$PRINCIPAL are still there" >&2
  exit 1
fi
echo "kafka-drop-acls: dropped $dropped ACL(s) of User:$PRINCIPAL; it may do nothing on the broker now"
