"""The suite model: what a ``*.sqleval.yaml`` file says, after validation.

Plain data, no I/O: the loader builds it, the plugin turns each :class:`Case`
into a test item, the evaluator reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .metrics.profiles import ComparisonOptions
from .passrule import PassRule


@dataclass(frozen=True)
class DatabaseSpec:
    """Where a case's database lives.

    ``url`` is a SQLAlchemy URL (a plain path in the suite becomes
    ``sqlite:///<absolute path>``). When ``setup`` names scripts, the
    database is built from them once per run (per xdist worker) at ``url``.
    """

    url: str
    setup: tuple[Path, ...] = ()
    source: str = ""  # as written in the suite, for messages

    @property
    def dialect(self) -> str:
        """The SQLAlchemy backend name: sqlite, duckdb, postgresql, mysql, ..."""
        backend = self.url.split(":", 1)[0].split("+", 1)[0]
        return "postgresql" if backend == "postgres" else backend

    @property
    def display(self) -> str:
        """The URL with any password hidden, for reports."""
        return hide_password(self.url)

    @property
    def file_path(self) -> Path | None:
        """The database file for ``sqlite:///``/``duckdb:///`` URLs, else None."""
        for prefix in ("sqlite:///", "duckdb:///"):
            if self.url.startswith(prefix) and len(self.url) > len(prefix):
                return Path(self.url[len(prefix):].split("?", 1)[0])
        return None


def hide_password(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, at, host = rest.rpartition("@")
    user, colon, _password = credentials.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}{at}{host}"


@dataclass(frozen=True)
class SchemaSource:
    """A Spider ``tables.json`` entry to use as the schema instead of inspecting the database."""

    tables_json: Path
    db_id: str


@dataclass(frozen=True)
class Case:
    """One evaluated question: a single case, or one turn of an interaction.

    For a turn, ``id`` is ``<interaction>/<turn>`` (how a predictions file
    addresses it), ``interaction`` and ``turn`` are set, and the test item is
    named ``<interaction>[<turn>]``.
    """

    id: str
    index: int  # position among the suite's evaluated questions, for stable ordering
    line: int
    gold: str
    question: str | None = None
    predicted: str | None = None
    has_prediction: bool = False
    databases: tuple[DatabaseSpec, ...] = ()
    schema: SchemaSource | None = None
    difficulty: str | None = None
    tags: tuple[str, ...] = ()
    interaction: str | None = None
    turn: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def item_name(self) -> str:
        if self.interaction is not None:
            return f"{self.interaction}[{self.turn}]"
        return self.id

    @property
    def database(self) -> DatabaseSpec | None:
        return self.databases[0] if self.databases else None


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    cases: tuple[Case, ...]
    execution: ComparisonOptions
    pass_if: PassRule
    exact_match: Any = None  # the resolved exact-match options; None means the default profile
    exact_match_requested: bool = False  # the suite asked for exact match explicitly
    dialect: str | None = None
    difficulty_classifier: str = "spider"
    thresholds: Mapping[str, float] = field(default_factory=dict)
    timeout: float | None = None
    max_rows: int | None = None
    description: str = ""
    predictions_file: Path | None = None

    def case(self, case_id: str) -> Case | None:
        for case in self.cases:
            if case.id == case_id:
                return case
        return None

    @property
    def has_interactions(self) -> bool:
        return any(c.interaction is not None for c in self.cases)
