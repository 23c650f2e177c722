-- Volumes registered through the REST API. Secrets and mount flags are stored sealed only.
CREATE TABLE volumes (
    volume_key          VARCHAR(260) PRIMARY KEY,         -- namespace/id
    namespace           VARCHAR(128) NOT NULL,
    id                  VARCHAR(128) NOT NULL,
    name                VARCHAR(256) NOT NULL,
    external_id         VARCHAR(1024) NOT NULL,
    plugin_id           VARCHAR(128) NOT NULL,
    access_mode         VARCHAR(40) NOT NULL,             -- the registered capability
    attachment_mode     VARCHAR(20) NOT NULL,
    fs_type             VARCHAR(32),
    mount_flag_count    INTEGER NOT NULL DEFAULT 0,
    parameters_json     TEXT NOT NULL DEFAULT '{}',
    context_json        TEXT NOT NULL DEFAULT '{}',
    topology_json       TEXT NOT NULL DEFAULT '{}',
    secret_keys_json    TEXT NOT NULL DEFAULT '[]',        -- the secrets' names (never their values)
    sealed_json         TEXT,                             -- SealedSecrets of SecretPayload(secrets, mount flags)
    claimed_access_mode VARCHAR(40),                      -- fixed by the first claim until no claim is left
    deleting            BOOLEAN NOT NULL DEFAULT FALSE,
    version             BIGINT NOT NULL DEFAULT 0,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    UNIQUE (namespace, id)
);

-- Claims, current and past, with the checkpoint of their state machine.
CREATE TABLE claims (
    claim_id             VARCHAR(64) PRIMARY KEY,
    volume_key           VARCHAR(260) NOT NULL,
    namespace            VARCHAR(128) NOT NULL,
    volume_id            VARCHAR(128) NOT NULL,
    allocation_id        VARCHAR(128) NOT NULL,
    node_id              VARCHAR(128) NOT NULL,
    mode                 VARCHAR(10) NOT NULL,            -- read | write
    request_id           VARCHAR(200) NOT NULL,           -- the claim-requested that created it
    release_request_id   VARCHAR(200),
    access_mode          VARCHAR(40) NOT NULL,
    attachment_mode      VARCHAR(20) NOT NULL,
    read_only            BOOLEAN NOT NULL,
    fs_type              VARCHAR(32),
    sealed_json          TEXT,                            -- secrets + effective mount flags, sealed
    phase                VARCHAR(30) NOT NULL,
    attempt              INTEGER NOT NULL DEFAULT 1,
    controller_required  BOOLEAN NOT NULL,
    controller_published BOOLEAN NOT NULL DEFAULT FALSE,
    release_requested    BOOLEAN NOT NULL DEFAULT FALSE,
    rolling_back         BOOLEAN NOT NULL DEFAULT FALSE,
    past                 BOOLEAN NOT NULL DEFAULT FALSE,
    command_id           VARCHAR(200),                    -- the command the current step waits on
    command_node_id      VARCHAR(128),
    command_deadline     TIMESTAMPTZ,
    retry_at             TIMESTAMPTZ,                     -- when a failed step is sent again
    external_node_id     VARCHAR(1024),
    controller_node_id   VARCHAR(128),
    publish_context_json TEXT NOT NULL DEFAULT '{}',
    host_path            VARCHAR(4096),
    last_error           VARCHAR(8192),
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    ended_at             TIMESTAMPTZ
);
CREATE INDEX claims_volume ON claims (volume_key, past);
CREATE UNIQUE INDEX claims_command ON claims (command_id);
CREATE INDEX claims_due ON claims (past, retry_at);
CREATE INDEX claims_deadline ON claims (past, command_deadline);
CREATE INDEX claims_ended ON claims (past, ended_at);

-- claim-requested ids already answered (idempotency under at-least-once delivery).
CREATE TABLE handled_requests (
    request_id  VARCHAR(200) PRIMARY KEY,
    handled_at  TIMESTAMPTZ NOT NULL
);

-- The last plugin-status of each plugin (a tombstone deletes the row).
CREATE TABLE plugins (
    plugin_id           VARCHAR(128) PRIMARY KEY,
    controller_required BOOLEAN NOT NULL,
    status_json         TEXT NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);

-- Each plugin's node instances, kept after they disappear so "gone for longer than the timeout" can be told.
CREATE TABLE plugin_nodes (
    plugin_id        VARCHAR(128) NOT NULL,
    node_id          VARCHAR(128) NOT NULL,
    external_node_id VARCHAR(1024),
    healthy          BOOLEAN NOT NULL,
    present          BOOLEAN NOT NULL,
    unhealthy_since  TIMESTAMPTZ,                         -- null while healthy and present
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (plugin_id, node_id)
);

-- The outbox: events committed with the state change that caused them, published after commit.
CREATE TABLE outbox (
    seq          BIGSERIAL PRIMARY KEY,
    ce_id        VARCHAR(64) NOT NULL UNIQUE,
    ce_type      VARCHAR(100) NOT NULL,
    ce_time      TIMESTAMPTZ NOT NULL,
    topic        VARCHAR(249) NOT NULL,
    record_key   VARCHAR(260),
    partition_no INTEGER,                                 -- set for node-commands (NodePartitioner)
    payload      TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    published_at TIMESTAMPTZ
);
CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_at IS NULL;
