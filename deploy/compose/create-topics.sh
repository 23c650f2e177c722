#!/bin/sh
# Creates the contract topics ahead of the services, with the partition counts of
# io.csiorchestrator.events.Topic (deploy-check's test keeps this list in step with the enum).
# Each topic's dead-letter topic gets the same partition count, never compaction.
# Idempotent: --if-not-exists. Run by kafka-setup.sh as csi-admin on the closed broker: KAFKA_COMMAND_CONFIG is the
# admin's client settings (SASL_SSL).
set -eu
BOOTSTRAP="${KAFKA_BOOTSTRAP_SERVERS:-kafka:9092}"
CONFIG="${KAFKA_COMMAND_CONFIG:?the admin client settings (SASL_SSL)}"
PREFIX="${CSI_TOPICS_PREFIX:-}"
KT=/opt/kafka/bin/kafka-topics.sh

topic() {
  name="$1"; partitions="$2"; shift 2
  "$KT" --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --create --if-not-exists \
        --topic "${PREFIX}${name}" --partitions "$partitions" --replication-factor 1 "$@"
  "$KT" --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --create --if-not-exists \
        --topic "${PREFIX}${name}-dead-letter" --partitions "$partitions" --replication-factor 1
}

topic claim-requested 6
topic claim-status    6
topic node-commands   12
topic mount-done      6
topic plugin-health   6
topic plugin-status   3 --config cleanup.policy=compact
topic node-events     6
topic node-state      6 --config cleanup.policy=compact
topic node-lease-requests 6
topic node-leases     6 --config cleanup.policy=compact
topic volume-status   6
topic placement       3 --config cleanup.policy=compact
