-- Issue 14 item 2: a snapshot's CreateSnapshot / DeleteSnapshot secrets, sealed like a volume's (provisions.sealed_json:
-- AES-256-GCM bound to <namespace>/<source volume id>, the volume the node command names); only their keys in clear.
ALTER TABLE snapshots ADD COLUMN secret_keys_json text NOT NULL DEFAULT '[]';
ALTER TABLE snapshots ADD COLUMN sealed_json text;
