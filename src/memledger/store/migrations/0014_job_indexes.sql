-- memledger schema 14: the jobs table keeps the indexes its queries use. A claim, a
-- queue count and a retry seek (status, tenant, created_at, job_id) (jobs_fair); a
-- tenant's listing and its recent count read (tenant, created_at) (jobs_recent). The
-- two older indexes over the same columns in another order are dropped: every job
-- written, leased or finished paid for them.
DROP INDEX IF EXISTS jobs_status;
DROP INDEX IF EXISTS jobs_queue;
