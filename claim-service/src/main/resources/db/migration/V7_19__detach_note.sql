-- Issue 19: why a claim's node side was assumed detached without the node's unmount (its lease lapsed and the fence
-- wait passed, its FENCED report, an operator's detach), kept while the controller-unpublish that follows runs, so
-- that the release's RELEASED says it too. Null: the node unmounted as asked.
ALTER TABLE claims ADD COLUMN detach_note TEXT;
