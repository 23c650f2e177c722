-- Issue 14: expansion results and resize on mount. node_expand_bytes: the capacity the plugin asked every node where
-- the volume is published to expand to (its last ControllerExpandVolume answered node_expansion_required; null when
-- no node expansion is owed). node_sizes_json: per node, the capacity its NodeExpandVolume reached (a JSON object
-- node id -> bytes); a claim that becomes ready on a node behind node_expand_bytes gets NodeExpandVolume there.
-- node_expand_on_mount: the NODE_EXPANDING run was started by such a claim, not by an expansion request.
ALTER TABLE provisions ADD COLUMN node_expand_bytes bigint;
ALTER TABLE provisions ADD COLUMN node_sizes_json text NOT NULL DEFAULT '{}';
ALTER TABLE provisions ADD COLUMN node_expand_on_mount boolean NOT NULL DEFAULT false;
