"""Hybrid search: arms, reciprocal rank fusion, filters and link expansion."""
