"""Performance: bench, the datasets it sends, tune."""
