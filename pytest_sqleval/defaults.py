"""The run settings' defaults, in a module that imports nothing (the plugin's options name them in their help,
and an inactive plugin must stay cheap to import)."""

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_MAX_MEMORY = 2 * 2**30  # bytes
