"""The dream steps (being written)."""
