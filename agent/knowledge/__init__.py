"""The knowledge base and long-term memory: store, chunking, indexing, recall."""
