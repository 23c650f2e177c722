-- Issue 36 (nothing busy while idle): the leader's reconcile pass is woken for the moment a claim, provision or
-- snapshot falls due (a retry's backoff or a wait ends, a command's answer is overdue) instead of querying every few
-- seconds. Each row written with a new due time sends NOTIFY csi_claims_due with that time in epoch milliseconds;
-- PostgreSQL delivers it at commit, and only if the transaction commits, to the leader's LISTEN connection, whichever
-- replica wrote the row (ReconcileSchedule).
CREATE FUNCTION csi_notify_due() RETURNS trigger AS $$
DECLARE
    due timestamptz := LEAST(NEW.retry_at, NEW.command_deadline);
BEGIN
    IF due IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.retry_at IS DISTINCT FROM NEW.retry_at
            OR OLD.command_deadline IS DISTINCT FROM NEW.command_deadline) THEN
        PERFORM pg_notify('csi_claims_due', floor(extract(epoch FROM due) * 1000)::bigint::text);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER claims_due_notify AFTER INSERT OR UPDATE ON claims FOR EACH ROW EXECUTE FUNCTION csi_notify_due();
CREATE TRIGGER provisions_due_notify AFTER INSERT OR UPDATE ON provisions FOR EACH ROW EXECUTE FUNCTION csi_notify_due();
CREATE TRIGGER snapshots_due_notify AFTER INSERT OR UPDATE ON snapshots FOR EACH ROW EXECUTE FUNCTION csi_notify_due();
