-- Issue 14 item 2: snapshots created and deleted through the services (CSI CreateSnapshot / DeleteSnapshot through a
-- healthy controller instance's node worker). One row per snapshot being created, created (ready to use) or being
-- deleted; written in the same transaction as the outbox row of its command (the request is recorded before the
-- RPC; a re-send uses the same CSI name, which CSI makes idempotent). The phase is ProvisionMachine.Phase.
CREATE TABLE snapshots (
    snapshot_key        text PRIMARY KEY,       -- <namespace>/<id>
    namespace           text NOT NULL,
    snapshot_id         text NOT NULL,
    csi_name            text NOT NULL,          -- CreateSnapshot's name: the idempotency key, <namespace>.<id>
    plugin_id           text NOT NULL,
    source_volume_key   text NOT NULL,          -- the registered volume it is cut from
    source_external_id  text NOT NULL,          -- that volume's plugin id
    phase               text NOT NULL,
    attempt             integer NOT NULL DEFAULT 0,
    parameters_json     text NOT NULL DEFAULT '{}',
    external_id         text,                   -- the plugin's snapshot id
    size_bytes          bigint,
    command_id          text,
    command_node_id     text,
    command_deadline    timestamptz,
    retry_at            timestamptz,
    last_error          text,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE UNIQUE INDEX snapshots_command_id ON snapshots (command_id) WHERE command_id IS NOT NULL;
CREATE INDEX snapshots_retry_at ON snapshots (retry_at) WHERE retry_at IS NOT NULL;
