-- One row per CSI plugin. The counts are recomputed from plugin_instance on every change of the
-- plugin (under a row lock on this row), never incremented or decremented.
create table plugin (
    id                    varchar(128) primary key,
    provider_name         varchar(256),
    provider_version      varchar(256),
    controller_required   boolean      not null default false,
    controllers_healthy   integer      not null default 0 check (controllers_healthy >= 0),
    controllers_expected  integer      not null default 0 check (controllers_expected >= 0),
    nodes_healthy         integer      not null default 0 check (nodes_healthy >= 0),
    nodes_expected        integer      not null default 0 check (nodes_expected >= 0),
    created_at            timestamptz  not null,
    updated_at            timestamptz  not null
);

-- One row per instance of a plugin on a node: what the node's worker last reported.
create table plugin_instance (
    plugin_id                   varchar(128) not null references plugin (id) on delete cascade,
    node_id                     varchar(128) not null,
    type                        varchar(16)  not null check (type in ('controller', 'node', 'monolith')),
    provider_name               varchar(256),
    provider_version            varchar(256),
    plugin_capabilities         text         not null default '[]',
    controller_capabilities     text         not null default '[]',
    node_capabilities           text         not null default '[]',
    external_node_id            varchar(1024),
    max_volumes                 bigint,
    accessible_topology         text         not null default '{}',
    reported_healthy            boolean      not null,
    reported_health_description varchar(4096),
    silence_reason              varchar(1024),
    last_heartbeat              timestamptz  not null,
    last_received               timestamptz  not null,
    primary key (plugin_id, node_id)
);

-- The expiry sweep looks for instances by when they were last heard from.
create index plugin_instance_last_received on plugin_instance (last_received);
