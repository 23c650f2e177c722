-- Issue 12, wanted 2: plugin outages delay claims, they do not reject them.
-- When a claim (or its current node step) began waiting for its node's plugin instance; null when not waiting.
ALTER TABLE claims ADD COLUMN plugin_wait_since TIMESTAMPTZ;
CREATE INDEX claims_waiting_for_plugin ON claims (node_id) WHERE plugin_wait_since IS NOT NULL AND NOT past;
-- When plugin-status last said the node instance is healthy: an instance never healthy has no outage to wait out.
ALTER TABLE plugin_nodes ADD COLUMN last_healthy_at TIMESTAMPTZ;
