"""Watching a running server: health, liveness, incidents."""
