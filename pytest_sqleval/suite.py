"""The suite model: what a ``*.sqleval.yaml`` file says, after validation.

Plain data, no I/O: the loader builds it, the plugin turns each :class:`Case`
into a test item, the evaluator reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Protocol
from urllib.parse import unquote

from .comparison import ComparisonOptions
from .secrets import parse_url


class PassRule(Protocol):
    """What the suite needs of its ``pass_if`` rule (built by :func:`pytest_sqleval.passrule.parse_pass_rule`)."""

    text: str

    @property
    def metrics(self) -> set[str]: ...

    @property
    def clauses(self) -> set[str]: ...

    def holds(self, metrics: Mapping[str, Any]) -> bool: ...


#: The difficulty classifier's levels (Spider's).
SPIDER_LEVELS = ("easy", "medium", "hard", "extra")


def difficulty_bucket(label: str) -> str:
    """The breakdown bucket of a difficulty label: a classifier level written in any case is that level (`Hard` is
    `hard`: one bucket, not two); any other label as written."""
    return label.lower() if label.lower() in SPIDER_LEVELS else label


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
    #: The suite's `connect_timeout:` (seconds), None for the run's setting; not part of the identity.
    connect_timeout: float | None = field(default=None, compare=False)

    #: What the URL says, read once when the spec is made (:func:`url_facts`): a pickled suite carries it, so a
    #: process that only reads suites (the xdist controller) never imports SQLAlchemy to parse URLs again.
    _facts: tuple[str, Path | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_facts", url_facts(self.url))

    @property
    def dialect(self) -> str:
        """The SQLAlchemy backend name: sqlite, duckdb, postgresql, mysql, ... (``postgres://`` is postgresql)."""
        return self._facts[0]

    @property
    def display(self) -> str:
        """The URL with any password hidden, for reports."""
        return hide_password(self.url)

    @property
    def file_path(self) -> Path | None:
        """The database file of a ``sqlite:///``/``duckdb:///`` URL, else None (in memory, or a server)."""
        return self._facts[1]


@lru_cache(maxsize=1024)
def url_facts(url: str) -> tuple[str, Path | None]:
    """(dialect, database file) of a URL, read with SQLAlchemy's ``make_url`` (cached: the cases of a suite
    share their URL)."""
    file_facts = _file_url_facts(url)
    if file_facts is not None:
        return file_facts
    parsed = parse_url(url)
    backend = parsed.get_backend_name() if parsed is not None else url.split(":", 1)[0].split("+", 1)[0]
    dialect = "postgresql" if backend == "postgres" else backend
    if parsed is None or parsed.get_backend_name() not in ("sqlite", "duckdb") or parsed.host:
        return dialect, None
    if not parsed.database or parsed.database == ":memory:":
        return dialect, None
    return dialect, Path(parsed.database)


def database_file_kind(path: Path | str) -> str | None:
    """``"sqlite"`` or ``"duckdb"`` when the file's header says it is one (SQLite's ``SQLite format 3\\0``; DuckDB's
    8-byte checksum, then ``DUCK``), else None (another file, or none to read)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    if head == b"SQLite format 3\x00":
        return "sqlite"
    return "duckdb" if head[8:12] == b"DUCK" else None


def file_url(scheme: str, path: Path | str) -> str:
    """The SQLAlchemy URL of a database file: ``sqlite:///<path>`` with the characters SQLAlchemy's ``make_url``
    would read otherwise escaped (``%`` is percent-decoded there, ``?`` starts the query string), so any file name
    opens the file it names."""
    return f"{scheme}:///" + str(path).replace("%", "%25").replace("?", "%3F")


def _file_url_facts(url: str) -> tuple[str, Path | None] | None:
    """:func:`url_facts` of a plain ``sqlite:///PATH`` / ``duckdb:///PATH`` URL (no driver, no query string: what
    a database written as a path becomes), read as ``make_url`` reads it without importing SQLAlchemy (~0.1 s of
    a run whose databases are all files); None for any other URL."""
    backend, separator, rest = url.partition(":///")
    if not separator or backend not in ("sqlite", "duckdb") or "?" in rest:
        return None
    database = unquote(rest)  # make_url percent-decodes the database part
    return backend, None if not database or database == ":memory:" else Path(database)


def hide_password(url: str) -> str:
    """``url`` with its password and secret query parameters masked (see :mod:`pytest_sqleval.secrets`)."""
    from .secrets import mask_url

    return mask_url(url)


@dataclass(frozen=True)
class SchemaSource:
    """A Spider ``tables.json`` entry to use as the schema instead of inspecting the database."""

    tables_json: Path
    db_id: str


@dataclass(frozen=True)
class ExpectedRows:
    """Rows a case expects instead of a gold query (``expected: {columns: [...], rows: [[...]]}``)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    ordered: bool = False


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
    #: How many turns the interaction has (for a turn), so a partial run (``-k``, ``--lf``) is told apart.
    turns: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Every accepted gold SQL (``gold: [sql1, sql2]``); ``gold`` is the first. Empty for expected rows.
    golds: tuple[str, ...] = ()
    #: ``expected: {columns, rows}``: rows the prediction must return, instead of a gold query.
    expected: ExpectedRows | None = None
    #: Shape checks on the prediction's result: column names (or a count), a row count.
    expect_columns: tuple[str, ...] | int | None = None
    expect_rows: int | None = None
    #: A SQL policy checked on the parsed prediction (a :class:`pytest_sqleval.policy.Policy`).
    policy: Any = None
    #: ``evidence:`` (BIRD's external knowledge), for the model's prompt.
    evidence: str | None = None

    @property
    def accepted_golds(self) -> tuple[str, ...]:
        """The gold SQL texts any of which may match (none for a case with expected rows)."""
        if self.golds:
            return self.golds
        return (self.gold,) if self.gold else ()

    @property
    def has_shape_checks(self) -> bool:
        return self.expect_columns is not None or self.expect_rows is not None

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
    max_memory: int | None = None  # bytes
    connect_timeout: float | None = None
    #: `allow_functions:`: the user's own functions a prediction may call beside the dialect's allowlist.
    allow_functions: tuple[str, ...] = ()
    description: str = ""
    predictions_file: Path | None = None
    #: The model keys (`model:`, `prompt:`, ...): a :class:`pytest_sqleval.model.config.SuiteModelSpec`, or None.
    model: Any = None
    #: `efficiency: true`: time gold and prediction for BIRD's R-VES (`r_ves`), as --sqleval-efficiency does.
    efficiency: bool = False

    def case(self, case_id: str) -> Case | None:
        for case in self.cases:
            if case.id == case_id:
                return case
        return None

    @property
    def has_interactions(self) -> bool:
        return any(c.interaction is not None for c in self.cases)
