-- Issue 14: volumes created and deleted through the services (CSI CreateVolume / DeleteVolume through a healthy
-- controller instance's node worker). One row per volume being created, created, or being deleted; written in the
-- same transaction as the outbox row of its command (the request is recorded before the RPC). The volume itself is
-- registered in `volumes` only once the plugin answered, and deregistered only once DeleteVolume succeeded.
CREATE TABLE provisions (
    volume_key          text PRIMARY KEY,
    namespace           text NOT NULL,
    volume_id           text NOT NULL,
    csi_name            text NOT NULL,          -- CreateVolume's name: the idempotency key, <namespace>.<id>
    plugin_id           text NOT NULL,
    phase               text NOT NULL,          -- ProvisionMachine.Phase
    attempt             integer NOT NULL DEFAULT 0,
    name                text,
    access_mode         text NOT NULL,
    attachment_mode     text NOT NULL,
    fs_type             text,
    mount_flag_count    integer NOT NULL DEFAULT 0,
    parameters_json     text NOT NULL DEFAULT '{}',
    topology_json       text NOT NULL DEFAULT '{}',  -- the requested topology segment
    secret_keys_json    text NOT NULL DEFAULT '[]',
    sealed_json         text,                   -- secrets and mount flags, sealed
    failover            text,
    capacity_min_bytes  bigint,
    capacity_max_bytes  bigint,
    source_snapshot_id  text,
    source_volume_id    text,
    external_id         text,                   -- the plugin's answer
    capacity_bytes      bigint,
    context_json        text,
    accessible_topology_json text,
    command_id          text,
    command_node_id     text,
    command_deadline    timestamptz,
    retry_at            timestamptz,
    last_error          text,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE UNIQUE INDEX provisions_command_id ON provisions (command_id) WHERE command_id IS NOT NULL;
CREATE INDEX provisions_retry_at ON provisions (retry_at) WHERE retry_at IS NOT NULL;
