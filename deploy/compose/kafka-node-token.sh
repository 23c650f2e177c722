#!/bin/sh
# The compose worker's Kafka credential (README "Security", issue 20 item 8): a delegation token of principal
# node-<CSI_NODE_ID>, issued on the running broker as csi-admin with the image's kafka-delegation-tokens.sh, and
# written into the worker's credential volume in the file format of events-schema's KafkaToken (the worker reads it as
# CSI_KAFKA_TOKEN_FILE):
#
#   owner=node-<id>
#   token-id=...
#   hmac=...                       (base64, as the tool prints it)
#   expires=2026-12-28T10:00:00Z   (ISO-8601, UTC)
#
# owned by the worker's uid, 0600. Run by kafka-setup.sh (the one-shot kafka-topics container) after kafka-users.sh
# gave the principal its ACLs and quotas. Idempotent: the token in the file is kept while the broker still holds it and
# more than a third of CSI_KAFKA_NODE_TOKEN_TTL is left; otherwise (file missing or unreadable, token revoked, expired,
# or the broker's storage made anew) a new one is issued that lives CSI_KAFKA_NODE_TOKEN_TTL (30d, 12h, 90m, 45s;
# default 30d, at most the broker's 365 days), renewable and revocable by csi-admin (./csi kafka-credential). The
# token it replaces is not revoked: a worker still running on it keeps working until it expires; restart the worker to
# load the new file.
set -eu
umask 077
BOOTSTRAP="${KAFKA_BOOTSTRAP_SERVERS:-kafka:9092}"
CONFIG="${KAFKA_COMMAND_CONFIG:?the admin client settings (SASL_SSL)}"
KAFKA_BIN="${KAFKA_BIN:-/opt/kafka/bin}"
NODE_ID="${1:-${CSI_NODE_ID:-node-1}}"
FILE="${CSI_KAFKA_TOKEN_OUT:-/out/node/token}"
WORKER_UID="${CSI_WORKER_UID:-0}"
TTL="${CSI_KAFKA_NODE_TOKEN_TTL:-30d}"
ADMIN=csi-admin

case "$NODE_ID" in
  ''|*[!A-Za-z0-9._-]*|.*) echo "kafka-node-token: node id '$NODE_ID' is not a safe id" >&2; exit 2 ;;
esac
OWNER="node-$NODE_ID"

number="${TTL%[smhd]}"
case "$number" in
  ''|*[!0-9]*) echo "kafka-node-token: CSI_KAFKA_NODE_TOKEN_TTL takes a duration like 30d, 12h or 90m, not '$TTL'" >&2
    exit 2 ;;
esac
case "$TTL" in
  *s) ttl_seconds=$number ;;
  *m) ttl_seconds=$((number * 60)) ;;
  *h) ttl_seconds=$((number * 3600)) ;;
  *d) ttl_seconds=$((number * 86400)) ;;
  *) echo "kafka-node-token: CSI_KAFKA_NODE_TOKEN_TTL needs a unit (s, m, h, d): '$TTL'" >&2; exit 2 ;;
esac
if [ "$ttl_seconds" -le 0 ] || [ "$ttl_seconds" -gt 31536000 ]; then
  echo "kafka-node-token: CSI_KAFKA_NODE_TOKEN_TTL must be more than 0 and at most 365d, not '$TTL'" >&2
  exit 2
fi

# the tool prints dates in its JVM's time zone, minute precision: make that UTC so they compare with ours
KAFKA_OPTS="${KAFKA_OPTS:-} -Duser.timezone=UTC"
export KAFKA_OPTS
tokens() {
  "$KAFKA_BIN/kafka-delegation-tokens.sh" --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" "$@"
}
# $1 epoch seconds, $2 date format
utc() {
  date -u -d "@$1" "+$2"
}
# $1 < $2, both ISO-8601 UTC texts of the same layout
before() {
  awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'
}
# $1 key: its value in the token file
field() {
  sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$FILE" | head -n 1 | tr -d '\r'
}

now=$(date -u +%s)
# keep a token that has more than a third of its lifetime left (minute precision: the tool's)
threshold=$(utc $((now + ttl_seconds / 3)) '%Y-%m-%dT%H:%M')

reason="no token file $FILE"
if [ -s "$FILE" ]; then
  owner=$(field owner); id=$(field token-id); hmac=$(field hmac); expires=$(field expires)
  if [ "$owner" != "$OWNER" ] || [ -z "$id" ] || [ -z "$hmac" ] || [ -z "$expires" ]; then
    reason="$FILE is not a token of $OWNER"
  else
    # the broker's word on it: TOKENID HMAC OWNER REQUESTER RENEWERS... ISSUEDATE EXPIRYDATE MAXDATE
    live=$(tokens --describe --owner-principal "User:$OWNER" \
      | awk -v id="$id" '$1 == id { e = $(NF - 1); m = $NF; print (e < m ? e : m); exit }')
    if [ -z "$live" ]; then
      reason="token $id is not on the broker (revoked and dropped, or a new broker storage)"
    elif before "$live" "$threshold"; then
      reason="token $id expires $live UTC, within a third of $TTL"
    else
      echo "kafka-node-token: keeping token $id of $OWNER (expires $live UTC)"
      exit 0
    fi
  fi
fi

echo "kafka-node-token: issuing a token of $OWNER for $TTL ($reason)"
issued=$(date -u +%s)
created=$(tokens --create --owner-principal "User:$OWNER" --renewer-principal "User:$ADMIN" \
  --max-life-time-period $((ttl_seconds * 1000)))
set -- $(printf '%s\n' "$created" | awk '$1 == "TOKENID" { header = 1; next } header && NF >= 2 { print $1, $2; exit }')
if [ $# -ne 2 ]; then
  echo "kafka-node-token: no token id and HMAC in the answer of kafka-delegation-tokens.sh --create" >&2
  exit 1
fi
# the broker's expiry is its clock at creation plus the lifetime: ours taken just before is never later
tmp="$FILE.tmp.$$"
trap 'rm -f "$tmp"' EXIT
{
  echo "# Kafka delegation token of $OWNER: a secret, keep this file 0600"
  echo "owner=$OWNER"
  echo "token-id=$1"
  echo "hmac=$2"
  echo "expires=$(utc $((issued + ttl_seconds)) '%Y-%m-%dT%H:%M:%SZ')"
} > "$tmp"
chown "$WORKER_UID:$WORKER_UID" "$tmp"
chmod 600 "$tmp"
mv -f "$tmp" "$FILE"
trap - EXIT
echo "kafka-node-token: token $1 of $OWNER in $FILE, expires $(utc $((issued + ttl_seconds)) '%Y-%m-%dT%H:%M:%SZ')"
