-- Issue 19 item 4: storage fencing. 'failed' once a storage fence (ControllerUnpublish of the volume from the claim's
-- unreachable node) of this claim failed or got no answer: it is tried once per claim, then only the lease wait frees it.
ALTER TABLE claims ADD COLUMN storage_fence VARCHAR(16);
