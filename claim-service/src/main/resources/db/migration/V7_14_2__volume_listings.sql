-- Issue 14: a record without a volume. claim-service compares the volumes it created (provisions with the plugin's
-- id) with the plugin's CSI ListVolumes, periodically, per plugin with LIST_VOLUMES (provision.VolumeListings):
-- listed_at: the start of the last listing that listed the volume; unlisted_since: when a complete listing first did
-- not list it (null: listed, or never compared). A mark only: nothing is deleted for it.
ALTER TABLE provisions ADD COLUMN listed_at timestamptz;
ALTER TABLE provisions ADD COLUMN unlisted_since timestamptz;
CREATE INDEX provisions_plugin ON provisions (plugin_id);

-- One listing (a sweep through ListVolumes' pages) per plugin at a time: its start, the pages read, the page command
-- outstanding (id, node, deadline) and how the last one ended.
CREATE TABLE volume_listings (
    plugin_id        text PRIMARY KEY,
    started_at       timestamptz,
    pages            integer NOT NULL DEFAULT 0,
    command_id       text,
    command_node_id  text,
    command_deadline timestamptz,
    completed_at     timestamptz,
    last_error       text
);
CREATE UNIQUE INDEX volume_listings_command_id ON volume_listings (command_id) WHERE command_id IS NOT NULL;
