"""The audit: AuditStore (the only writer of audit.db), its migrations, the queue's and approvals' rows."""
