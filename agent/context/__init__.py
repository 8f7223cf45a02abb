"""What the model reads: the system prompt, the workspace's context files, compaction."""
