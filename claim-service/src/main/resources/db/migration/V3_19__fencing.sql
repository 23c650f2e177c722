-- Issue 19: fencing. The lease epoch of the claim's node when its mount was sent (null: no lease known then), and
-- the volume's write generation when the claim was granted (a fencing token echoed by the worker).
ALTER TABLE claims ADD COLUMN lease_epoch BIGINT;
ALTER TABLE claims ADD COLUMN claim_generation BIGINT;
-- Which wait a release announced last ('lease-valid', 'lapsed', 'no-lease', 'manual'), so each is announced once.
ALTER TABLE claims ADD COLUMN fence_wait VARCHAR(16);
ALTER TABLE volumes ADD COLUMN write_generation BIGINT NOT NULL DEFAULT 0;
-- The volume's failover: 'fence' or 'manual' (issue 19 item 7); null = the default, 'fence'.
ALTER TABLE volumes ADD COLUMN failover VARCHAR(8);
