"""The catalog of indexed files and the indexer that keeps every projection in step with the notes."""
