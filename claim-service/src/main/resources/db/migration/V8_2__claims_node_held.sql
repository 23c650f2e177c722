-- Issue 34: a claim on a node with a volume limit counts the volumes of its plugin the node holds (current claims,
-- in flight included); this keeps that count to the node's own claims.
CREATE INDEX claims_node_held ON claims (node_id, volume_key) WHERE NOT past;
-- A placement capacity entry is keyed by plugin and topology segment (capacity/<plugin>/<key=value,...>), longer
-- than a volume key can be.
ALTER TABLE outbox ALTER COLUMN record_key TYPE VARCHAR(2048);
