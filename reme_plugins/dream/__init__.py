"""The dream pipeline."""
