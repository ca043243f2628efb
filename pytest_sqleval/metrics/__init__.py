"""The metrics: pure functions over query results and SQL trees; nothing here knows pytest."""
