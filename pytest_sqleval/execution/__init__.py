"""Execution: database specs, read-only engines, and running one query safely."""
