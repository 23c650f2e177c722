-- Volume usage (issue 34 item 3): the last usage each node's worker reported (node-events of kind volume-usage,
-- CSI NodeGetVolumeStats) for a volume published there; a figure the plugin did not report is NULL. Versioned
-- 11.34.3 (session 11, issue 34, item 3) so that another migration of the same issue merges without a clash.
CREATE TABLE volume_usage (
    usage_key        VARCHAR(400) PRIMARY KEY,   -- namespace/volume@node
    volume_key       VARCHAR(260) NOT NULL,      -- namespace/id, as volumes.volume_key
    node_id          VARCHAR(128) NOT NULL,
    plugin_id        VARCHAR(128),
    bytes_total      BIGINT,
    bytes_available  BIGINT,
    bytes_used       BIGINT,
    inodes_total     BIGINT,
    inodes_free      BIGINT,
    inodes_used      BIGINT,
    observed_at      TIMESTAMPTZ NOT NULL        -- when the worker saw these figures
);
CREATE INDEX volume_usage_volume ON volume_usage (volume_key);
