"""Which files hold suites: ``*.sqleval.yaml`` (collected under a folder), any YAML file named on the command line.

Shared by collection, the xdist scheduler and the crashed-worker record, which all read node ids or paths.
"""

from __future__ import annotations

from pathlib import Path

SUITE_SUFFIXES = (".sqleval.yaml", ".sqleval.yml")
YAML_SUFFIXES = (".yaml", ".yml")


def is_suite_file(path: Path) -> bool:
    """A file collected as a suite wherever it is found (a plain ``.yaml`` only when named on the command line)."""
    return path.name.endswith(SUITE_SUFFIXES) or path.name.lower().endswith(SUITE_SUFFIXES)  # also `.SQLEVAL.YAML`


def is_suite_node_path(path: str) -> bool:
    """The path part of a node id that may be a suite's (``*.sqleval.yaml`` or a YAML file named explicitly)."""
    return path.endswith(SUITE_SUFFIXES + YAML_SUFFIXES) or path.lower().endswith(YAML_SUFFIXES)  # also `.YAML`
