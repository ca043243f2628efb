"""``python -m pytest_sqleval.datasets import|stats|generate ...`` (the same as ``sqleval import|stats|generate``)."""

import sys

from .cli import main

sys.exit(main())
