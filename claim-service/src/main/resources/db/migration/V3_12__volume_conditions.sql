-- Volume condition (issue 12, wanted 5): the last CSI volume condition each node's worker reported
-- (node-events of kind volume-condition) for a volume published there. Versioned 3.12 so that another V3
-- migration of the same session merges without a clash.
CREATE TABLE volume_conditions (
    condition_key  VARCHAR(400) PRIMARY KEY,   -- namespace/volume@node
    volume_key     VARCHAR(260) NOT NULL,      -- namespace/id, as volumes.volume_key
    node_id        VARCHAR(128) NOT NULL,
    plugin_id      VARCHAR(128),
    abnormal       BOOLEAN NOT NULL,
    message        VARCHAR(1024),
    since          TIMESTAMPTZ NOT NULL        -- when the worker saw this condition begin
);
CREATE INDEX volume_conditions_volume ON volume_conditions (volume_key);
