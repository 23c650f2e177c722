-- Issue 36 item 3: a claim's phase, mode and access in typed columns. The values stay what they were (the phase's
-- name, the contract's wire values), now a closed set PostgreSQL checks; the claim transaction maps them to the
-- service's enums once per row read (store.ClaimTables), never again per use.
CREATE TYPE claim_phase AS ENUM ('PLUGIN_WAIT', 'RELEASE_WAIT', 'CONTROLLER_PUBLISHING', 'MOUNTING', 'READY', 'UNMOUNTING',
    'CONTROLLER_UNPUBLISHING', 'FREED', 'FAILED', 'STORAGE_FENCING');
CREATE TYPE claim_mode AS ENUM ('read', 'write');
CREATE TYPE csi_access_mode AS ENUM ('single-node-reader-only', 'single-node-writer', 'multi-node-reader-only',
    'multi-node-single-writer', 'multi-node-multi-writer', 'single-node-single-writer', 'single-node-multi-writer');
CREATE TYPE csi_attachment_mode AS ENUM ('file-system', 'block-device');
ALTER TABLE claims
    ALTER COLUMN phase TYPE claim_phase USING phase::claim_phase,
    ALTER COLUMN mode TYPE claim_mode USING mode::claim_mode,
    ALTER COLUMN access_mode TYPE csi_access_mode USING access_mode::csi_access_mode,
    ALTER COLUMN attachment_mode TYPE csi_attachment_mode USING attachment_mode::csi_attachment_mode;
