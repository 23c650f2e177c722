-- Publish after commit (issue 36 item 2). A row is sent by the process that committed it (direct = true), right
-- after the commit; writer is that process's key, an advisory lock it holds on its election connection for as long
-- as it lives (pg_locks shows it). The relay sends the rows that are not direct (a row written behind an unpublished
-- row of another writer on the same topic and key, a row whose direct send failed) and the direct rows of writers
-- that are gone (a kill -9 between commit and send).
ALTER TABLE outbox ADD COLUMN writer BIGINT;
ALTER TABLE outbox ADD COLUMN direct BOOLEAN NOT NULL DEFAULT false;
-- The check at insert time: is an earlier row of this topic and key still unpublished?
CREATE INDEX outbox_unpublished_key ON outbox (topic, record_key) WHERE published_at IS NULL;
