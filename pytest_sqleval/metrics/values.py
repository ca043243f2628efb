"""The one value normaliser shared by every result metric.

Two cells are *equal* when their normalised values are equal under Python's
``==`` inside a container (tuple, list, set, dict), which compares identity
first. Normalisation:

* **Numbers compare by value.** ``int`` and ``float`` of equal value are
  already equal (``1 == 1.0``, same hash). A ``Decimal`` becomes an ``int``
  when it is integral (``Decimal("2.00") -> 2``) and a ``float`` otherwise
  (``Decimal("0.5") -> 0.5``), so every driver's numbers compare alike.
* **NaN equals NaN.** Every NaN (float or Decimal) becomes the one object
  :data:`NAN`; containers compare identity first, so ``(NAN,) == (NAN,)``.
* **float_decimals.** ``None``: floats compare exactly (``0.1 + 0.2 != 0.3``).
  An integer N: every finite float is rounded with ``round(value, N)``
  first, so with N = 2 ``0.1 + 0.2`` and ``0.3`` both become ``0.3``.
  ints are exact and never rounded.
* **nulls.** ``"equal"``: ``None`` stays ``None`` and NULL equals NULL.
  ``"distinct"``: each ``None`` becomes a new :class:`DistinctNull`, equal
  only to itself, so a NULL never equals anything, not even another NULL.
* **bool keeps Python semantics**: ``True == 1`` and ``False == 0``. SQLite
  has no boolean type and returns 1/0 where other engines return booleans,
  so this makes them agree.
* **Containers become hashable**: a list or tuple (a PostgreSQL array)
  becomes a tuple, a dict (JSON) a frozenset of (key, value) pairs, a set a
  frozenset and a memoryview bytes, with their items normalised the same way.
* **Nothing else is converted**: ``'1' != 1``, ``b'a' != 'a'``; dates,
  times and other driver values compare with their own ``==``.

Fast path: a column is only rebuilt when it holds a value that normalising
would change (a float when rounding, a NaN or infinity, a Decimal, a container, a NULL
under ``nulls="distinct"``); any other column is used as it is, and the
check runs at C speed (``sum`` of a numeric column, ``"".join`` of a text
column, otherwise ``set(map(type, column))``). What the check computes is
kept (:attr:`Table.totals`: the exact sum of an ints column, the total
length of a text column) as a free fingerprint of the column's values.

Key columns: a column whose values are all distinct aligns two results'
rows, since a row of the other result holding key value v can only be the
row that holds v. :func:`find_key_column` (normalised columns) and
:func:`find_row_key` (raw rows, nothing transposed) look for one cheaply;
:func:`match_rows_by_key` uses one to show that two results hold the same
rows under some column mapping, verified on every row (the result metrics
use it on raw rows when ``nulls="equal"``, since normalising never makes
equal values unequal). Comparisons run with the garbage collector paused
(:func:`gc_paused`).
"""

from __future__ import annotations

import gc
import math
from collections import Counter
from contextlib import contextmanager
from decimal import Decimal
from functools import cached_property, partial
from itertools import chain
from operator import itemgetter
from typing import Any, Callable, Iterator, Literal, Sequence

Nulls = Literal["equal", "distinct"]
Column = list[Any]
Row = tuple[Any, ...]

NAN: float = float("nan")
"""The single object every NaN is normalised to (see the module docstring)."""

_NoneType = type(None)
_CONTAINERS = (list, tuple, dict, set, frozenset, memoryview)


class DistinctNull:
    """A NULL under ``nulls="distinct"``: equal to nothing but itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL"


def normalise_value(value: Any, *, float_decimals: int | None = None, nulls: Nulls = "equal") -> Any:
    """One cell, normalised as the module docstring says."""
    if isinstance(value, float):
        return _normalise_float(value, float_decimals)
    if isinstance(value, Decimal):
        return _normalise_decimal(value, float_decimals)
    if value is None and nulls == "distinct":
        return DistinctNull()
    if isinstance(value, _CONTAINERS):
        return _normalise_container(value, float_decimals, nulls)
    return value


def _normalise_container(value: Any, float_decimals: int | None, nulls: Nulls) -> Any:
    normalise = partial(normalise_value, float_decimals=float_decimals, nulls=nulls)
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return frozenset(zip(map(normalise, value), map(normalise, value.values())))
    if isinstance(value, (set, frozenset)):
        return frozenset(map(normalise, value))
    return tuple(map(normalise, value))


def _normalise_float(value: float, float_decimals: int | None) -> float:
    if value != value:
        return NAN
    if float_decimals is None or not math.isfinite(value):
        return value
    return round(value, float_decimals)


def _normalise_decimal(value: Decimal, float_decimals: int | None) -> int | float:
    if value.is_nan():
        return NAN
    if value.is_finite() and value == value.to_integral_value():
        return int(value)
    return _normalise_float(float(value), float_decimals)


INTS, FLOATS, TEXT, OTHER = "ints", "floats", "text", "other"
"""Column kinds: ints and bools only; numbers with at least one float; str only; anything else."""


def column_kind(column: Sequence[Any]) -> str:
    """The column's kind (:data:`INTS`, :data:`FLOATS`, :data:`TEXT` or :data:`OTHER`), at C speed."""
    return kind_and_total(column)[0]


def kind_and_total(column: Sequence[Any]) -> tuple[str, Any]:
    """The column's kind and what the kind check computed on the way.

    The total is the ``sum`` of an :data:`INTS` column (exact, so equal value
    multisets have equal totals) or of a :data:`FLOATS` column (rounded in
    the cells' order: a hint, not a fingerprint), the total length of a
    :data:`TEXT` column (the length of its ``"".join``), else ``None`` or
    whatever ``sum`` returned.
    """
    try:
        total = sum(column)
    except TypeError:  # text, bytes, NULL, dates... or a Decimal next to a float
        length = _text_length(column)
        return (OTHER, None) if length is None else (TEXT, length)
    if isinstance(total, int):
        return INTS, total
    if isinstance(total, float):
        return FLOATS, total
    return OTHER, total  # a Decimal, or a driver's own number type


def _text_length(column: Sequence[Any]) -> int | None:
    """The total length of an all-str column, or None when some cell is not a str."""
    try:
        return len("".join(column))  # fails on the first cell that is not a str
    except TypeError:
        return None


def column_needs_normalising(column: Sequence[Any], *, float_decimals: int | None = None, nulls: Nulls = "equal") -> bool:
    """Whether :func:`normalise_value` could change any cell of ``column``."""
    kind, total = kind_and_total(column)
    return _needs_normalising(column, kind, total, float_decimals, nulls)


def _needs_normalising(column: Sequence[Any], kind: str, total: Any, float_decimals: int | None, nulls: Nulls) -> bool:
    if kind in (INTS, TEXT):
        return False
    if kind == FLOATS:  # a NaN or an infinity makes the total non-finite
        return float_decimals is not None or not math.isfinite(total)
    return _types_need_normalising(column, float_decimals, nulls)


def _types_need_normalising(column: Sequence[Any], float_decimals: int | None, nulls: Nulls) -> bool:
    types = set(map(type, column))
    if Decimal in types or (nulls == "distinct" and _NoneType in types):
        return True
    if any(issubclass(kind, _CONTAINERS) for kind in types):
        return True
    if not any(issubclass(kind, float) for kind in types):
        return False
    return float_decimals is not None or any(isinstance(value, float) and not math.isfinite(value) for value in column)


def normalise_column(column: Column, *, float_decimals: int | None = None, nulls: Nulls = "equal") -> Column:
    """``column`` itself when no cell would change, else a normalised copy."""
    return _normalise_column(column, float_decimals, nulls)[0]


def _normalise_column(column: Column, float_decimals: int | None, nulls: Nulls) -> tuple[Column, str, Any]:
    """The normalised column, its kind and its total (see :func:`kind_and_total`)."""
    kind, total = kind_and_total(column)
    if not _needs_normalising(column, kind, total, float_decimals, nulls):
        return column, kind, total
    normalised = list(map(partial(normalise_value, float_decimals=float_decimals, nulls=nulls), column))
    return (normalised, *kind_and_total(normalised))


def split_columns(rows: Sequence[Sequence[Any]], width: int) -> list[Column]:
    """The columns of ``rows``, each a list, transposed at C speed."""
    cells = list(chain.from_iterable(rows))
    if len(cells) != width * len(rows):
        raise ValueError(f"rows are not all {width} cells wide")
    if width == 1:
        return [cells]
    return [cells[index::width] for index in range(width)]


class Table:
    """A result's cells after normalisation, by column and by row.

    ``columns[i]`` is column i as a list, ``kinds[i]`` its kind (see
    :func:`column_kind`) and ``totals[i]`` what the kind check computed (the
    exact sum of an ints column, the total length of a text column, see
    :func:`kind_and_total`). ``rows`` are tuples: the original row tuples
    when no column needed normalising (``unchanged``; nothing is copied),
    otherwise tuples rebuilt from the normalised columns on first use.
    """

    def __init__(self, rows: Sequence[Row], width: int, *, float_decimals: int | None = None, nulls: Nulls = "equal") -> None:
        raw_columns = split_columns(rows, width)
        self.width = width
        normalised = [_normalise_column(column, float_decimals, nulls) for column in raw_columns]
        self.columns = [column for column, _, _ in normalised]
        self.kinds = [kind for _, kind, _ in normalised]
        self.totals = [total for _, _, total in normalised]
        self.unchanged = all(normalised is raw for normalised, raw in zip(self.columns, raw_columns))
        if self.unchanged:
            self.rows = rows if isinstance(rows, list) else list(rows)

    @cached_property
    def rows(self) -> list[Row]:  # only computed when some column was normalised
        return list(zip(*self.columns))

    @cached_property
    def key_column(self) -> KeyColumn | None:
        """A column whose values are all distinct, if one is found cheaply; see :func:`find_key_column`."""
        return find_key_column(self.columns, self.kinds)


KEY_SAMPLES = (64, 1024, 8192)
"""Leading cells of a column checked for a repeated value, in turn, before it is tried in full as a key."""
MAX_KEY_TRIES = 2
"""How many columns are tried in full (each costs a dict of the column) before giving up."""
_KEY_PREFERENCE = {INTS: 0, TEXT: 1, FLOATS: 2, OTHER: 3}
_TYPE_PREFERENCE = {int: 0, str: 1, float: 2}  # the same order for raw cells


class KeyColumn:
    """A column whose values are all distinct: ``index`` and ``positions`` (value -> row index).

    A key column aligns rows: a row of another result whose cell is equal
    to the key cell of row i can only correspond to row i.
    """

    __slots__ = ("index", "positions")

    def __init__(self, index: int, positions: dict[Any, int]) -> None:
        self.index = index
        self.positions = positions

    def rows_of(self, cells: Column) -> list[int] | None:
        """For each cell, the row whose key value equals it; None when some cell is not a key value."""
        try:
            return list(map(self.positions.__getitem__, cells))
        except KeyError:
            return None


def gatherer(order: list[int]) -> Callable[[Column], Column]:
    """A function that returns a column's cells in ``order`` (``[column[i] for i in order]``) at C speed."""
    if len(order) == 1:
        only = order[0]
        return lambda column: [column[only]]
    pick = itemgetter(*order)
    return lambda column: list(pick(column))


def find_key_column(columns: list[Column], kinds: list[str]) -> KeyColumn | None:
    """A column whose (normalised) values are all distinct, or None.

    Columns whose leading cells (:data:`KEY_SAMPLES`) repeat no value are tried,
    ints first, then text, floats, the rest; at most :data:`MAX_KEY_TRIES`
    are tried in full. ``None`` only means none was found this cheaply
    (or the cells are not hashable), not that none exists.
    """
    ranks = [_KEY_PREFERENCE[kind] for kind in kinds]
    return _find_key(ranks, lambda index, size: columns[index][:size], columns.__getitem__, len(columns[0]))


def find_row_key(rows: Sequence[Row], width: int) -> KeyColumn | None:
    """:func:`find_key_column` on raw rows: each column is read straight out of the rows (nothing is transposed).

    The order of preference comes from the type of each cell of the first row.
    """
    ranks = [_TYPE_PREFERENCE.get(type(cell), 3) for cell in rows[0]]
    if len(ranks) != width:
        return None
    return _find_key(ranks, lambda index, size: list(map(itemgetter(index), rows[:size])), lambda index: map(itemgetter(index), rows), len(rows))


def _find_key(ranks: list[int], head: Callable[[int, int], list[Any]], cells: Callable[[int], Any], count: int) -> KeyColumn | None:
    tries = 0
    for index in sorted(range(len(ranks)), key=ranks.__getitem__):
        try:
            if not all(_distinct(head(index, size)) for size in KEY_SAMPLES if size < count or size == KEY_SAMPLES[0]):
                continue
            positions = dict(zip(cells(index), range(count)))
        except TypeError:  # an unhashable driver value
            return None
        if len(positions) == count:
            return KeyColumn(index, positions)
        tries += 1
        if tries == MAX_KEY_TRIES:
            return None
    return None


def _distinct(values: list[Any]) -> bool:
    return len(set(values)) == len(values)


# ------------------------------------------------------------------ rows aligned by a key column

SCREEN_ROWS = 5
"""How many rows a candidate column mapping must agree on before it is verified on all rows."""


def screen_rows(count: int, how_many: int = SCREEN_ROWS) -> list[int]:
    """Up to ``how_many`` row indexes spread evenly over ``count`` rows, the first and the last included."""
    if count <= how_many:
        return list(range(count))
    return sorted({(count - 1) * step // (how_many - 1) for step in range(how_many)})


def match_rows_by_key(
    gold_rows: Sequence[Row],
    pred_rows: Sequence[Row],
    key: KeyColumn,
    candidates: Sequence[tuple[int, ...]] = (),
    groups: list[int] | None = None,
    read_off: bool = True,
) -> tuple[int, ...] | None:
    """A column mapping under which every predicted row is the gold row that holds its key cell, every gold row hit.

    ``key`` is a key column of ``gold_rows`` (:func:`find_row_key`) and a
    mapping ``m`` says that gold column c is compared with predicted
    column ``m[c]``. Under ``m`` predicted row s corresponds to gold row
    ``order[s]``, the gold row whose key cell equals its cell ``m[key]``.
    ``m`` is returned when every predicted row, its cells reordered by
    ``m``, equals its gold row, every gold row corresponds to some predicted
    row (``order`` is onto) and, with ``groups`` (the tie-group id of each
    row; both sides have as many rows), each row stays in its group. Then
    the predicted rows are the gold rows as a set, and as a multiset when
    both sides have as many rows. Column by column: predicted column
    ``m[c]`` holds exactly the values of gold column c.

    Mappings tried: ``candidates``, then (with ``read_off``) for each
    predicted column t the mapping read off a few rows (each gold column
    goes to the first free predicted column that agrees with it on those
    rows; only columns t whose screened gold row holds the same cells).
    Each is screened on :data:`SCREEN_ROWS` rows; the first that passes is
    verified on all rows and decides (so at most one full pass is spent).
    ``None`` only means no mapping was shown this way, not that none exists.
    """
    screen = screen_rows(len(pred_rows))
    tried: set[tuple[int, ...]] = set()
    read = _mappings_read_off(gold_rows, pred_rows, key, screen) if read_off else ()
    for mapping in chain(candidates, read):
        if mapping in tried:
            continue
        tried.add(mapping)
        verdict = _rows_agree_by_key(gold_rows, pred_rows, key, mapping, groups, screen)
        if verdict is not None:  # screened in and verified on all rows: no other mapping is tried
            return mapping if verdict else None
    return None


def _mappings_read_off(gold_rows: Sequence[Row], pred_rows: Sequence[Row], key: KeyColumn, screen: list[int]) -> Iterator[tuple[int, ...]]:
    """For each predicted column t that could be the key's: the mapping read off the screened rows."""
    width = len(gold_rows[0])
    for t in range(width):
        pairs = []
        for row in screen:
            gold_row = key.positions.get(pred_rows[row][t])
            if gold_row is None:
                break
            pairs.append((gold_rows[gold_row], pred_rows[row]))
        else:
            if dict.__eq__(Counter(pairs[0][0]), Counter(pairs[0][1])):  # the same cells, rearranged
                mapping = read_off_mapping(pairs, width, {key.index: t})
                if mapping is not None:
                    yield mapping


def read_off_mapping(pairs: list[tuple[Row, Row]], width: int, fixed: dict[int, int]) -> tuple[int, ...] | None:
    """Each gold column to the first free predicted column whose cells agree with it in every (gold, predicted) row pair."""
    mapping = dict(fixed)
    free = [index for index in range(width) if index not in fixed.values()]
    for gold_index in range(width):
        if gold_index in mapping:
            continue
        for position, pred_index in enumerate(free):
            if all(_same(pred[pred_index], gold[gold_index]) for gold, pred in pairs):
                mapping[gold_index] = pred_index
                del free[position]
                break
        else:
            return None
    return tuple(mapping[index] for index in range(width))


def _same(first: Any, second: Any) -> bool:
    """Equality as a container sees it (identity first)."""
    return first is second or first == second


def reorderer(mapping: tuple[int, ...]) -> Callable[[Row], Row] | None:
    """A function that reorders a row by ``mapping`` (its cell c is the row's cell ``mapping[c]``); None for the identity."""
    if mapping == tuple(range(len(mapping))):
        return None
    if len(mapping) == 1:
        only = mapping[0]
        return lambda row: (row[only],)
    return itemgetter(*mapping)


def _rows_agree_by_key(
    gold_rows: Sequence[Row],
    pred_rows: Sequence[Row],
    key: KeyColumn,
    mapping: tuple[int, ...],
    groups: list[int] | None,
    screen: list[int],
) -> bool | None:
    """Whether the rows agree under ``mapping``; None when the screened rows already say no."""
    pred_key = mapping[key.index]
    reorder = reorderer(mapping)
    for row in screen:
        gold_row = key.positions.get(pred_rows[row][pred_key])
        if gold_row is None or (groups is not None and groups[gold_row] != groups[row]):
            return None
        if (pred_rows[row] if reorder is None else reorder(pred_rows[row])) != gold_rows[gold_row]:
            return None
    order = key.rows_of(map(itemgetter(pred_key), pred_rows))  # type: ignore[arg-type]
    if order is None or len(set(order)) != len(gold_rows):
        return False
    if groups is not None and list(map(groups.__getitem__, order)) != groups:
        return False
    gathered = gatherer(order)(gold_rows)  # type: ignore[arg-type]
    return gathered == (list(pred_rows) if reorder is None else list(map(reorder, pred_rows)))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector.

    Comparing results allocates a tuple, a list or a set per row or column
    but never a reference cycle; left on, the collector would traverse every
    row again and again.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def display_value(value: Any) -> Any:
    """A normalised value as a report shows it: a distinct NULL is ``None`` again."""
    return None if isinstance(value, DistinctNull) else value


def display_row(row: Row) -> Row:
    return tuple(map(display_value, row))
