"""SQL-level helpers that work on the sqlglot tree: the untrusted-SQL guard,
what the gold's ORDER BY asks of a prediction, and rewrites that options ask for."""
