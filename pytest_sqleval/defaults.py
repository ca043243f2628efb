"""The run settings' defaults, in a module that imports nothing (the plugin's options name them in their help,
and an inactive plugin must stay cheap to import)."""

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_MAX_MEMORY = 2 * 2**30  # bytes


def effective_limit(run_value, suite_value, default, *, from_cli: bool):
    """The one precedence rule of every per-query limit (timeout, row cap, memory cap, connect timeout): the
    command line, then the suite's own key, then the ini option, then the default. ``run_value`` is the command
    line's or the ini's value (``from_cli`` says which); ``suite_value`` None for the run as a whole."""
    if from_cli:
        return run_value
    return suite_value or run_value or default
