"""A miss explained: the reason, both SQL texts, and a compact table diff."""

from __future__ import annotations

from typing import Any, Sequence

from ..registry import active_registry

CELL_WIDTH = 24

#: Characters a terminal or a CI log acts on (escape sequences, line breaks, bidirectional overrides): predicted
#: SQL and its values are untrusted, so every rendered line shows them as escapes (``\x1b``, ``\x0a``), never raw.
_UNPRINTABLE = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))} | {
    c: f"\\u{c:04x}" for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def printable(text: str) -> str:
    """``text`` for one line of a terminal or CI log: control characters shown as escapes."""
    return text.translate(_UNPRINTABLE)


def miss_reason(record: dict[str, Any]) -> str:
    """One line: why a case missed (an error kind, a result mismatch, a policy or shape violation, pass_if)."""
    return printable(_miss_reason(record))


def _miss_reason(record: dict[str, Any]) -> str:
    error = record.get("error")
    if error:
        return f"{error['kind']}: {error['message']}{_cut_off(record)}"
    mismatch = record.get("mismatch")
    if mismatch:
        # several databases (test-suite accuracy): the diff shown is the first database the prediction missed on
        where = f" (on {mismatch['database']})" if len(record.get("databases") or ()) > 1 and mismatch.get("database") \
            else ""
        return f"{mismatch['reason']}: {mismatch['detail']}{where}"
    violated = violation(record)
    if violated is not None:
        return f"{violated[0]}: {violated[1]}"
    if record.get("execution_match") and not record.get("passed_rule"):
        return (f"pass_if does not hold (soft_f1 {record.get('soft_f1')}, exact_match {record.get('exact_match')}"
                f"{user_metric_values(record, str)})")
    if record.get("exact_match") is False:
        return f"exact_match: {record.get('exact_match_reason') or 'clauses differ'}"
    if "valid" in record and record["valid"] is None:  # scored, never run: a case with only a `schema:`
        return NOT_RUN
    return "pass_if does not hold"


def _cut_off(record: dict[str, Any]) -> str:
    """A note for a model answer the endpoint cut at its token limit (``finish_reason: "length"``): its SQL's
    syntax error or missing table is the cut, not the model's SQL."""
    extra = record.get("prediction_extra")
    if isinstance(extra, dict) and extra.get("finish_reason") == "length":
        return (" (the model's answer was cut off at its token limit, finish_reason length; fix: raise `max_tokens` "
                "in the suite's `model:`)")
    return ""


def violation(record: dict[str, Any]) -> tuple[str, str] | None:
    """``("policy" | "shape", what was violated)`` when the case's SQL policy or shape check failed, else None: a
    case whose results match misses for it, and every report names it as its reason."""
    for key, fallback in (("policy", "violated"), ("shape", "not as expected")):
        check = record.get(key)
        if isinstance(check, dict) and check.get("passed") is False:
            return key, "; ".join(str(v) for v in check.get("violations") or ()) or fallback
    return None


def user_metric_values(record: dict[str, Any], fmt: Any) -> str:
    """``, pred_len 60.0``: the case's values of the metrics a user registered, which a ``pass_if`` may name, so a
    miss whose rule failed on one of them says so (empty without such metrics)."""
    keys = [m.case_key for m in active_registry().user_case_metrics() if m.in_pass_if and m.case_key in record]
    return "".join(f", {key} {fmt(record[key])}" for key in dict.fromkeys(keys))


NOT_RUN = ("pass_if does not hold: the prediction was not run (the case has no database, only a schema), so its "
           "execution metrics are not computed; use a pass_if of exact_match")


def render_miss(record: dict[str, Any], *, verbose: bool) -> str:
    """Text for one miss; ``verbose`` adds the SQL and the result tables."""
    lines = [f"{record['id']}: {miss_reason(record)}"]
    if not verbose:
        return lines[0]
    where = (record.get("mismatch") or {}).get("first_out_of_order")
    if where:  # an order miss: where the order first differs, under its reason (the heads are often alike)
        lines.append(f"  first out of order: {printable(str(where))}")
    gold = "(expected rows)" if record.get("gold") is None and record.get("expected") is not None else \
        _one_line(record.get("gold"))  # a case with `expected:` rows has no gold SQL
    lines.append(f"  gold SQL:      {gold}")
    lines.append(f"  predicted SQL: {_one_line(record.get('predicted')) if record.get('predicted') is not None else '(none)'}")
    if record.get("soft_f1") is not None and record.get("valid"):
        lines.append(f"  soft_f1: {record['soft_f1']:.4f}")
    mismatch = record.get("mismatch")
    if mismatch:
        lines.extend(_indent(_table_block("gold", mismatch["gold_columns"], mismatch["gold_head"], mismatch["gold_shape"])))
        lines.extend(_indent(_table_block("predicted", mismatch["predicted_columns"], mismatch["predicted_head"],
                                          mismatch["predicted_shape"])))
        gold_only, predicted_only = rows_only(mismatch["gold_only_rows"], mismatch["predicted_only_rows"])
        if mismatch.get("gold_only_typed") is not None or mismatch.get("predicted_only_typed") is not None:
            # the JSON values print alike (a DECIMAL and a float are both JSON numbers): the engine's values, typed
            gold_only, predicted_only = (typed_rows_text(mismatch.get(f"{side}_only_typed") or ())
                                         for side in ("gold", "predicted"))
        if gold_only:
            lines.append("  rows only in gold:       " + gold_only)
        if predicted_only:
            lines.append("  rows only in prediction: " + predicted_only)
        counts = _only_counts(mismatch)
        if counts:
            lines.append(f"  ({counts})")
        cut = _cut_columns(mismatch, "gold") or _cut_columns(mismatch, "predicted")
        if (gold_only or predicted_only) and cut:
            lines.append(f"  {ROWS_CUT_NOTE}{cut[0]} of {cut[1]} columns)")
    clauses = record.get("clauses") or {}
    wrong = [name for name, ok in clauses.items() if not ok]
    if wrong:
        index = record.get("exact_match_gold_index")  # several golds: name the one these clauses are of, when the
        other = index is not None and index != record.get("gold_index", 0)  # SQL shown above is another gold
        lines.append(f"  exact match{f' (gold #{index + 1})' if other else ''}: clauses differ: {', '.join(wrong)}")
    return "\n".join(lines)


def _one_line(sql: str | None) -> str:
    return printable(sql_on_one_line(sql))


#: Where white space can be a value's: string literals, quoted names (also `[name]`), PostgreSQL's dollar quotes.
_QUOTES = ("'", '"', "`", "[", "$")


def sql_on_one_line(sql: str | None) -> str:
    """The SQL on one line: each run of white space between tokens one space, while white space inside a string
    literal or a quoted name is the value's and kept (``'a  b'`` is not ``'a b'``: a miss must not show two texts
    that differ there as one)."""
    text = (sql or "").strip()
    flat = " ".join(text.split())
    if flat == text or not any(quote in text for quote in _QUOTES):
        return flat  # (the tokenizer runs only where white space may be a value's: ~1 ms a text)
    from ..sql.spacing import collapse_white_space

    return collapse_white_space(text)


#: The line under the rows only in one side when a wide result's rows are cut to their first columns.
ROWS_CUT_NOTE = "(rows above: their first "


def _only_counts(mismatch: dict[str, Any]) -> str | None:
    """``71 rows only in gold, 0 only in the prediction; up to 5 of each shown`` when the example rows above are fewer
    than the rows only in one side (a report before the counts, or a verdict without them: None)."""
    sides = [(mismatch.get(f"{side}_only_count"), len(mismatch.get(f"{side}_only_rows") or ()))
             for side in ("gold", "predicted")]
    if any(count is None for count, _ in sides) or all(count <= shown for count, shown in sides):
        return None
    (gold, gold_shown), (predicted, predicted_shown) = sides
    return (f"{gold} row{'s' if gold != 1 else ''} only in gold, {predicted} only in the prediction; up to "
            f"{max(gold_shown, predicted_shown)} of each shown")


def _cut_columns(mismatch: dict[str, Any], side: str) -> tuple[int, int] | None:
    """(shown, all) when the rows only in ``side`` show fewer columns than its result has (a report cuts them)."""
    rows, shape = mismatch.get(f"{side}_only_rows") or (), mismatch.get(f"{side}_shape") or (0, 0)
    return (len(rows[0]), shape[1]) if rows and len(rows[0]) < shape[1] else None


def _indent(lines: list[str]) -> list[str]:
    return ["  " + line for line in lines]


def _table_block(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], shape: Sequence[int]) -> list[str]:
    n_rows, n_cols = shape
    header = f"{title} result: {n_rows} row{'s' if n_rows != 1 else ''} x {n_cols} column{'s' if n_cols != 1 else ''}"
    if n_rows > len(rows):
        header += f" (first {len(rows)})"
    if columns and n_cols > len(columns):  # a report keeps a wide result's first columns
        header += f" (first {len(columns)} columns)"
    return [header, *("  " + line for line in format_table(columns, rows))]


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    cells = [[_cell(c) for c in columns], *[[_cell(v) for v in row] for row in rows]]
    widths = [max(_width(r[i]) for r in cells if i < len(r)) for i in range(len(cells[0]) if cells else 0)]
    return [" | ".join(value + " " * (widths[i] - _width(value)) for i, value in enumerate(r)).rstrip() for r in cells]


def _width(text: str) -> int:
    """Terminal cells a text takes: East Asian wide and full-width characters two, combining marks none."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cell(value: Any) -> str:
    text = "NULL" if value is None else printable(str(value))
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def _row(row: Sequence[Any]) -> str:
    return "(" + ", ".join(map(_row_cell, row)) + ")"


def _row_cell(value: Any) -> str:
    """A cell of a row-only line: text that is empty or starts or ends with white space quoted (``('')`` against
    ``(NULL)``, ``('Oslo ')`` against ``(Oslo)``), which a line of bare values would not show."""
    if isinstance(value, str) and (not value or value != value.strip()):
        return _cell(f"'{value}'")
    return _cell(value)


def rows_only(gold_only: Sequence[Sequence[Any]], predicted_only: Sequence[Sequence[Any]], *,
              typed: bool | None = None) -> tuple[str, str]:
    """The rows only in gold and only in the prediction, each side one line. When a row of one side would print
    as a row of the other (the text '1' and the number 1; 'é' as one code point and as 'e' + an accent), or when
    ``typed``, every cell is shown with its type: text quoted, anything but printable ASCII escaped."""
    if typed is None:
        typed = rows_look_alike(gold_only, predicted_only)
    if not typed:
        return "; ".join(map(_row, gold_only)), "; ".join(map(_row, predicted_only))
    for width in (TYPED_CELL_WIDTH, WIDE_TYPED_CELL_WIDTH):  # long values that differ past the first width: wider
        gold_texts, predicted_texts = ([_typed_row(r, width) for r in rows] for rows in (gold_only, predicted_only))
        if not set(gold_texts) & set(predicted_texts):
            break
    return "; ".join(gold_texts), "; ".join(predicted_texts)


def rows_look_alike(gold_only: Sequence[Sequence[Any]], predicted_only: Sequence[Sequence[Any]]) -> bool:
    """Would a row only in gold print like a row only in the prediction? (Characters no one sees, such as a
    zero-width space or a soft hyphen, do not count.)"""
    import unicodedata

    def looks(row: Sequence[Any]) -> str:
        text = unicodedata.normalize("NFKC", _row(row))
        return "".join(c for c in text if unicodedata.category(c) != "Cf")

    if {looks(r) for r in gold_only} & {looks(r) for r in predicted_only}:
        return True
    # a cell that prints like the other side's cell in its column, yet is another value (the text '1' beside the
    # number 1), next to cells that differ visibly: `(x'00ff', 1)` against `(x'00fe', 1)` hid the second difference
    return any(len(g) == len(p) and any(looks((a,)) == looks((b,)) and (type(a) is not type(b) or a != b)
                                        for a, b in zip(g, p))
               for g in gold_only[:DIFF_LOOKS] for p in predicted_only[:DIFF_LOOKS]
               if isinstance(g, (list, tuple)) and isinstance(p, (list, tuple)))


#: How many rows of each side :func:`rows_look_alike` compares cell by cell (a miss shows a few example rows).
DIFF_LOOKS = 20


#: Longest typed cell (see :func:`typed_cells`): longer than :data:`CELL_WIDTH`, so that ``Decimal('…')`` keeps the
#: digits a JSON float drops (``Decimal('0.10000000000000000001')``).
TYPED_CELL_WIDTH = 64
#: Longest typed cell of :func:`rows_only` when two long values still print alike at :data:`TYPED_CELL_WIDTH`.
WIDE_TYPED_CELL_WIDTH = 1024


def typed_cells(row: Sequence[Any], width: int = TYPED_CELL_WIDTH) -> list[str]:
    """Each cell of ``row`` with its type: ``ascii()`` of the value (text quoted, a ``Decimal('0.1')`` apart from the
    float ``0.1``, anything but printable ASCII escaped), ``NULL`` for None. A longer cell keeps its start and its
    end (``'https://example.com/…/item/00001'``): two long values often differ only at the end."""
    def cell(value: Any) -> str:
        text = "NULL" if value is None else _typed_text(value)
        if len(text) <= width:
            return text
        tail = width // 3
        return text[: width - tail - 1] + "…" + text[-tail:]

    return list(map(cell, row))


def _typed_text(value: Any) -> str:
    """``ascii()`` of a value, with the containers of a miss's example rows (normalised: a STRUCT, MAP or JSON object
    is a frozenset of its (key, value) pairs, a LIST or array a tuple) shown as the engine's value prints: ``{'a': 1}``
    and ``[1, 2]``, never ``frozenset({('a', 1)})`` or ``(1, 2)``, which no engine returned."""
    if isinstance(value, tuple):
        return "[" + ", ".join(map(_typed_text, value)) + "]"
    if isinstance(value, frozenset) and value and all(isinstance(pair, tuple) and len(pair) == 2 for pair in value) \
            and len({pair[0] for pair in value}) == len(value):
        items = sorted((_typed_text(key), _typed_text(inner)) for key, inner in value)
        return "{" + ", ".join(f"{key}: {inner}" for key, inner in items) + "}"
    return ascii(value)


def typed_rows_text(rows: Sequence[Sequence[Any]]) -> str:
    """Rows of :func:`typed_cells` texts (as a report records them) on one line."""
    return "; ".join("(" + ", ".join(printable(str(cell)) for cell in row) + ")" for row in rows
                     if isinstance(row, (list, tuple)))


def _typed_row(row: Sequence[Any], width: int = TYPED_CELL_WIDTH) -> str:
    return "(" + ", ".join(typed_cells(row, width)) + ")"


def first_out_of_order(run: Any, pred: Any, verdict: Any, options: Any) -> str | None:
    """Where an ``order`` miss starts (a mismatch's ``first_out_of_order``): the first row whose gold and predicted
    rows differ (``row 500 of 1000: gold (500), the prediction (501)``), or under ``ties: any`` the first run of rows
    tied on the ORDER BY keys whose rows differ; each row in the gold's column order. The heads of two results in a
    different order are often alike (a swap at row 500): without it a miss says the order differs but not where."""
    if verdict.reason != "order" or options.duplicates != "bag" or len(run.result.rows) != len(pred.rows):
        return None
    try:
        return _out_of_order_line(run, pred, verdict, options)
    except Exception:  # noqa: BLE001 - an explanation must never turn a miss into an error
        return None


def _out_of_order_line(run: Any, pred: Any, verdict: Any, options: Any) -> str | None:
    from collections import Counter

    from ..metrics.normalised_table import normalised_pair

    gold, width = run.result, run.result.column_count
    mapping = tuple(verdict.column_mapping) if verdict.column_mapping is not None else tuple(range(width))
    if len(mapping) != width or pred.column_count != width:
        return None
    gold_table, pred_table = normalised_pair(gold.rows, width, pred.rows, width, float_decimals=options.float_decimals,
                                             nulls=options.nulls, numbers=options.numbers)
    gold_rows, pred_rows = gold_table.rows, [tuple(row[j] for j in mapping) for row in pred_table.rows]
    count = len(gold_rows)
    tied = options.ties == "any" and run.tie_groups is not None
    starts = sorted({0, *(s for s in run.tie_groups if 0 < s < count)}) if tied else range(count)  # type: ignore[union-attr]
    for start, end in zip(starts, [*list(starts)[1:], count]):
        if end - start == 1:
            if gold_rows[start] == pred_rows[start]:
                continue
            at, gold_at = start, start
        else:
            gold_group, pred_group = Counter(gold_rows[start:end]), Counter(pred_rows[start:end])
            gold_extra, pred_extra = gold_group - pred_group, pred_group - gold_group
            if not gold_extra:
                continue
            at = next(i for i in range(start, end) if pred_rows[i] in pred_extra)
            gold_at = next(i for i in range(start, end) if gold_rows[i] in gold_extra)
        shown_gold, shown_pred = rows_only([gold.rows[gold_at]], [tuple(pred.rows[at][j] for j in mapping)])
        if end - start == 1:
            return f"row {start + 1} of {count}: gold {shown_gold}, the prediction {shown_pred}"
        return (f"rows {start + 1}-{end} of {count} (tied on the ORDER BY keys): gold has "
                f"{shown_gold} there, the prediction {shown_pred}")
    return None
