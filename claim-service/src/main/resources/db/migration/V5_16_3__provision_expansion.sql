-- Issue 14 item 3: volume expansion through the services. A provision in EXPANDING / NODE_EXPANDING / EXPAND_FAILED
-- keeps the capacity asked for, and, while NodeExpandVolume runs node after node, the nodes still to expand (the
-- first one's command outstanding or due). capacity_bytes keeps what the plugin's controller last reported.
ALTER TABLE provisions ADD COLUMN expand_to_bytes bigint;
ALTER TABLE provisions ADD COLUMN expand_nodes_json text NOT NULL DEFAULT '[]';
