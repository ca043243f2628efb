"""Profile ``spider``: the official Spider / test-suite-sql-eval exact set match.

Semantics, reproduced from the official ``process_sql.py`` and ``evaluation.py``
(test-suite-sql-eval, the maintained version used by the Spider, SParC and
CoSQL leaderboards):

1. Both queries are read into the official SQL dict (:mod:`.spider_sql`):
   aliases from one pre-pass over the whole query (last mapping wins),
   unqualified columns resolved to the first FROM table that has them,
   double-quoted tokens read as strings, one direction for the whole ORDER BY,
   LIMIT values dropped.
2. Both are normalised (:mod:`.spider_normalise`): condition values become
   ``None`` except inside FROM subqueries; DISTINCT is dropped except inside
   WHERE and FROM subqueries; foreign-key columns are replaced by their
   group's representative (lowest global column index) when their table is
   in the query's FROM, never inside subqueries.
3. The ten components and the FROM table check are compared
   (:mod:`.components`); the prediction matches when all eleven hold. JOIN ON
   conditions, literal values and LIMIT values are therefore ignored.

A prediction the official grammar cannot read (column aliases, LEFT JOIN,
``<>``, IS NULL, CASE, CAST, CTEs, scalar functions, arithmetic with
constants, window functions, a joined FROM subquery, ...) is scored as the
official script does (against an empty SQL dict, so it never matches) with
reason ``outside_spider_grammar: <construct>``; one sqlglot cannot parse gets
``parse_error: <message>``. A gold outside the grammar raises
:class:`GoldOutsideGrammar` (the official script would crash), an unparseable
gold :class:`GoldParseError`.

Bounded: SQL beyond the limits of :mod:`pytest_sqleval.sql.limits` is not
read. Such a prediction (or one whose reading fails for any other reason)
scores 0 with the reason (``nested too deeply to score (...)``, ``too long to
score (...)``, ``too complex to score (...)``); such a gold raises
:class:`GoldTooComplex`. Nothing else is raised.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import suppress
from functools import lru_cache

from ...schema import Schema
from .components import spider_components
from .options import ExactMatchOptions
from .parsing import SqlParseError
from .spider_normalise import normalise_spider_sql
from .spider_sql import OutsideGrammar, SpiderRead, SpiderSQL, empty_spider_sql, read_spider_sql
from .spider_tail import OfficialReading, fill_bare_clauses, junk_free_prefix, official_reading
from .spider_text import apply_value_placeholder, mark_digit_words, mark_periods_in_words, split_final_period
from .verdict import (
    ExactMatchVerdict,
    GoldOutsideGrammar,
    GoldParseError,
    gold_failure,
    unscorable,
    verdict_from_clauses,
)


def spider_exact_match(gold_sql: str, pred_sql: str, schema: Schema, options: ExactMatchOptions,
                       dialect: str) -> ExactMatchVerdict:
    gold = normalised_gold(gold_sql, schema, dialect)
    try:
        key = (pred_sql, schema, dialect, options.value_placeholder)
        known = _predictions.get(key)
        if known is not None:  # the same prediction read for the same schema before (another case)
            pred, reason = known
            with suppress(KeyError):  # (dropped meanwhile by another thread: nothing to refresh)
                _predictions.move_to_end(key)
        else:
            if options.value_placeholder:
                pred_sql = apply_value_placeholder(pred_sql)
            pred_sql = mark_digit_words(mark_periods_in_words(split_final_period(pred_sql), dialect), dialect)
            pred_sql = fill_bare_clauses(pred_sql, dialect)  # ``ORDER BY`` with no item, ``LIMIT;``
            # comments, junk after the query, a condition starting with NOT: what the official parser reads of it
            reading = official_reading(pred_sql, dialect)
            try:
                if sum(1 for char in pred_sql if char in "'\"") % 2:  # the official asserts on the whole text,
                    raise OutsideGrammar("unbalanced_quotes")          # junk and comments included
                if reading.text is None and reading.objection == "comment":
                    # junk words then a comment (``LIMIT 1 xyz -- c``): the official parser stops before the words
                    prefix = junk_free_prefix(pred_sql, dialect)
                    if prefix is not None and official_reading(prefix, dialect).text == prefix:
                        reading = OfficialReading(prefix)
                if reading.text is None:
                    raise SqlParseError(f"the official parser fails on it ({reading.objection})")
                try:
                    pred = read_spider_sql(reading.text, schema, dialect=dialect).sql
                except SqlParseError:
                    prefix = junk_free_prefix(reading.text, dialect)  # the official parser stops before the junk
                    if prefix is None:
                        raise
                    pred = read_spider_sql(prefix, schema, dialect=dialect).sql
                reason = None
            except SqlParseError as exc:
                pred, reason = empty_spider_sql(), f"parse_error: {exc}"
            except OutsideGrammar as exc:
                pred, reason = empty_spider_sql(), f"outside_spider_grammar: {exc.construct}"
            pred = normalise_spider_sql(pred, schema)
            _remember_prediction(key, pred, reason)
        clauses = spider_components(pred, gold, legacy_from_check=options.legacy_from_check)
    except Exception as exc:  # noqa: BLE001 - limits, recursion, memory or a bug: the prediction scores 0
        return unscorable(exc)
    if reason is None:
        return verdict_from_clauses(clauses)
    return ExactMatchVerdict(False, clauses, reason)


@lru_cache(maxsize=4096)
def normalised_gold(gold_sql: str, schema: Schema, dialect: str) -> SpiderSQL:
    """The gold's normalised SQL dict (cached: a gold is compared with many predictions)."""
    try:
        read = read_gold_spider(gold_sql, schema, dialect)
        _remember_gold_read(gold_sql, schema, dialect, read)
        return normalise_spider_sql(read.sql, schema)
    except SqlParseError as exc:
        raise GoldParseError(str(exc)) from None
    except OutsideGrammar as exc:
        raise GoldOutsideGrammar(exc.construct) from None
    except Exception as exc:  # noqa: BLE001 - limits, recursion, memory or a bug: the gold cannot be read
        raise gold_failure(exc) from None


def read_gold_spider(gold_sql: str, schema: Schema, dialect: str) -> SpiderRead:
    """The official parser's reading of a gold: what it reads of the text, as of a prediction (a comment or junk
    where it fails, a condition starting with NOT: :class:`OutsideGrammar`, the official run crashes; junk after a
    complete query, ``COLLATE``: ignored), then :func:`read_spider_sql`. Raises as that does."""
    text = mark_digit_words(mark_periods_in_words(split_final_period(gold_sql), dialect), dialect)
    text = fill_bare_clauses(text, dialect)
    reading = official_reading(text, dialect)
    if reading.text is None:
        raise OutsideGrammar(reading.objection or "unreadable")
    try:
        return read_spider_sql(reading.text, schema, dialect=dialect)
    except SqlParseError:
        prefix = junk_free_prefix(reading.text, dialect)  # the official parser stops before the junk
        if prefix is None:
            raise
        return read_spider_sql(prefix, schema, dialect=dialect)


#: Normalised readings of predictions kept (least recently used dropped past this many): a model often writes the
#: same text for the paraphrased questions of one database.
PREDICTIONS_KEPT = 1024
_predictions: OrderedDict[tuple[str, Schema, str, bool], tuple[SpiderSQL, str | None]] = OrderedDict()


def _remember_prediction(key: tuple[str, Schema, str, bool], pred: SpiderSQL, reason: str | None) -> None:
    """Keep a prediction's normalised SQL dict and reason (shared, read only: the components only read them).

    Keyed by everything the reading depends on: the text as written, the schema, the dialect and the
    ``value_placeholder`` option (``legacy_from_check`` only changes the comparison). A reading that raised is
    never kept, so it is computed, and fails the same way, each time."""
    _predictions[key] = (pred, reason)
    if len(_predictions) > PREDICTIONS_KEPT:
        _predictions.popitem(last=False)


#: Strict readings of golds that :func:`normalised_gold` read, kept for the hardness classifier, which reads the
#: same gold the same way (least recently stored dropped past :data:`GOLD_READS_KEPT`).
GOLD_READS_KEPT = 4096
_gold_reads: OrderedDict[tuple[str, Schema, str], SpiderRead] = OrderedDict()


def _remember_gold_read(gold_sql: str, schema: Schema, dialect: str, read: SpiderRead) -> None:
    _gold_reads[(gold_sql, schema, dialect)] = read
    if len(_gold_reads) > GOLD_READS_KEPT:
        _gold_reads.popitem(last=False)


def known_gold_read(gold_sql: str, schema: Schema, dialect: str) -> SpiderRead | None:
    """The strict reading of a gold exact match has already read (shared: do not modify), else None.

    Only successful readings are kept, and only exact match stores them, so a reader that falls back to
    reading the text itself gets what it would have computed, and exact match never depends on it."""
    return _gold_reads.get((gold_sql, schema, dialect))
