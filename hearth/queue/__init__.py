"""The queue's side: the request model, reading one, the queue directory, its ledger, submitting."""
