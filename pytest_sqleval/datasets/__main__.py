"""``python -m pytest_sqleval.datasets import|stats|generate ...`` (the same as ``sqleval import|stats|generate``)."""

from .cli import main, run_console

run_console(main)
