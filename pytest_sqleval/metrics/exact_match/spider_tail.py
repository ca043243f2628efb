"""What the official Spider parser reads of a prediction with comments or junk (profile ``spider`` only).

The official ``process_sql.py`` tokenizes with NLTK, which knows no comments: ``--``, ``/*``, ``*/`` and the
comment's words become ordinary tokens. Its recursive parser reads clause after clause and, once the query is
complete, **stops and ignores the rest** (``get_sql`` never checks that every token was used). So:

* text after a top-level ``;`` or an unmatched ``)`` is never read;
* junk (a comment, a stray word, a Markdown fence) right after a clause the parser leaves cleanly (``LIMIT n``,
  ``GROUP BY`` columns, ``ORDER BY`` items, a JOIN's ``ON`` condition) is ignored: the query before it is
  scored. Right after ``ORDER BY`` items without a direction, a ``/*`` is read as division and fails;
* anywhere else (a hint after ``SELECT``, a comment in the middle or at the start, junk after a ``FROM`` table
  or a ``WHERE``/``HAVING`` condition) the parser fails: the official scores the prediction 0;
* a condition that starts with ``NOT`` (``NOT a IN (...)``, ``NOT EXISTS``) fails too (``Error col: not``);
  only ``a NOT IN``/``NOT LIKE``/``NOT BETWEEN`` are read.
* junk at the end after a condition (WHERE, HAVING, ON) whose value is a column (``WHERE a != b -- note``) is
  swallowed by the official value scanner, which reads on to the next ``,``, ``)``, ``and``, clause or join
  keyword: ignored, unless that stop word makes the parser go on and fail (``and``, ``,``, ``order``, a set
  operation; after ON also ``as``, ``join``, ``where``) or read a LIMIT (``limit``); a comment without stop
  words after such a value, anywhere in the text, is swallowed the same way;

:func:`official_reading` returns the text to read (the prefix the official parser uses) or the reason it fails.
Decided on sqlglot's tokens and the gaps between them (a gap that is not white space is a comment), never with
regexes; checked against the official code on Spider dev golds with junk appended (benchmarks/fuzz_fidelity.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import sqlglot
from sqlglot import Token, TokenType

from ...sql.limits import parse_bounded, tokenize_bounded
from .spider_text import NLTK_SEPARATORS

_CLAUSES = {
    TokenType.SELECT: "select", TokenType.FROM: "from", TokenType.WHERE: "where", TokenType.GROUP_BY: "group",
    TokenType.HAVING: "having", TokenType.ORDER_BY: "order", TokenType.LIMIT: "limit", TokenType.ON: "on",
    TokenType.UNION: "select", TokenType.INTERSECT: "select", TokenType.EXCEPT: "select",
}
#: Clauses the official parser leaves cleanly when junk follows them.
_CLEAN_STOPS = frozenset({"limit", "group", "order", "block"})  # (a JOIN's ON: see _column_value_last)
#: ``block``: the ``)`` closing a parenthesised query at the top (``... UNION (SELECT ...)``), after which the
#: official ``parse_sql`` returns.
_SET_OPERATORS = frozenset({TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT})
_CONDITION_STARTS = frozenset({TokenType.WHERE, TokenType.HAVING, TokenType.AND, TokenType.OR, TokenType.ON})
#: Tokens after which the prefix is incomplete (junk there fails in any clause).
_DANGLING = frozenset({TokenType.COMMA, TokenType.DOT, TokenType.EQ, TokenType.NEQ, TokenType.GT, TokenType.GTE,
                       TokenType.LT, TokenType.LTE, TokenType.AND, TokenType.OR, TokenType.NOT, TokenType.IN,
                       TokenType.LIKE, TokenType.BETWEEN, TokenType.PLUS, TokenType.DASH, TokenType.STAR,
                       TokenType.SLASH, TokenType.L_PAREN})


_COMPARISONS = frozenset({TokenType.EQ, TokenType.NEQ, TokenType.GT, TokenType.GTE, TokenType.LT, TokenType.LTE,
                          TokenType.LIKE})
_NLTK_STOPS = frozenset(",()")
#: Where the official value scanner stops (``process_sql.parse_value``), and those after which it stops cleanly.
_SCANNER_STOPS = frozenset({",", ")", "and", "select", "from", "where", "group", "order", "limit", "intersect",
                            "union", "except", "join", "on", "as"})
_STOPS_CLEANLY = {"where": frozenset({")", "select", "from", "where", "join", "on", "as"}),
                  "having": frozenset({")", "select", "from", "where", "join", "on", "as"}),
                  "on": frozenset({")", "select", "from"})}  # after ON the FROM loop reads a table next


@dataclass(frozen=True)
class OfficialReading:
    """``text``: what the official parser reads (None: it fails, with ``objection``)."""

    text: str | None
    objection: str | None = None


def official_reading(sql: str, dialect: str) -> OfficialReading:
    tokens, sql = _tokens_and_text(sql, dialect)
    if tokens is None:
        return OfficialReading(sql)  # no usable tokens: the normal reading reports the parse error
    if not tokens:
        return OfficialReading(None, "empty")
    if _gap(sql, 0, tokens[0].start):
        return OfficialReading(None, "comment")  # the first official token is the comment's
    swallowed = _without_swallowed_comments(sql, tokens)
    if swallowed is not None:
        tokens, sql = _tokens_and_text(swallowed, dialect)
        if not tokens:
            return OfficialReading(sql)
    depth, state, last = 0, None, None  # before ``token``
    for i, (token, after) in enumerate(zip(tokens, _clause_walk(tokens))):
        kind = token.token_type
        if i and _gap(sql, tokens[i - 1].end + 1, token.start):
            return _junk_at(sql, tokens, i, depth, state, last, "comment")
        if kind == TokenType.COLLATE:
            return _collate_at(sql, tokens, i, depth, state, last, dialect)
        if kind == TokenType.NOT and last is not None and last.token_type in _CONDITION_STARTS:
            return OfficialReading(None, "not_before_operand")
        if depth == 0 and (kind == TokenType.SEMICOLON or kind == TokenType.R_PAREN):
            return OfficialReading(sql[:token.start])  # the end of the statement, or an unmatched ")"
        if kind == TokenType.R_PAREN and depth == 1 and 0 < i < len(tokens) - 1 and _after_set_operation(tokens, i):
            # ``A UNION (B) ORDER BY x``: parse_sql returns at the ")" of the set operation's block
            return OfficialReading(sql[:token.end + 1])
        (depth, state), last = after, token
    if _gap(sql, tokens[-1].end + 1, len(sql)):
        return _junk_at(sql, tokens, len(tokens), depth, state, last, "comment", at_end=True)
    return OfficialReading(sql)


def junk_free_prefix(sql: str, dialect: str, *, max_cut: int = 8) -> str | None:
    """For a prediction sqlglot cannot parse: the longest prefix, at most ``max_cut`` tokens shorter, that it
    parses and after which the official parser stops cleanly (junk such as ``... LIMIT 3 answer``). None when
    there is none (the official parser fails as well, or the junk is not at the end)."""
    tokens, text = _tokens_and_text(sql, dialect)
    if not tokens:
        return None
    walk = list(_clause_walk(tokens))
    for cut in range(len(tokens) - 1, max(0, len(tokens) - 1 - max_cut), -1):
        limit_value = cut >= 2 and tokens[cut - 2].token_type == TokenType.LIMIT  # skipped whole, as any word
        if not limit_value and not _word_boundary(text, tokens[cut - 1], tokens[cut]):
            continue  # one word to NLTK (``d.y.0``): the official parser reads it whole, and fails
        depth, state = walk[cut - 1]
        reading = _junk_at(text, tokens, cut, depth, state, tokens[cut - 1], "junk", at_end=True)
        if reading.text is None:
            continue
        try:
            statements = [s for s in parse_bounded(reading.text, dialect)
                          if s is not None and not isinstance(s, sqlglot.exp.Semicolon)]
        except Exception:  # noqa: BLE001 - not a parseable prefix: try a shorter one
            continue
        if len(statements) == 1:
            return reading.text
    return None


def _junk_at(sql: str, tokens: list[Token], index: int, depth: int, state: str | None, last: Token | None,
             what: str, *, at_end: bool = False) -> OfficialReading:
    """Junk starts before ``tokens[index]`` (or at the end): the prefix if the parser stops cleanly there.
    ``at_end``: everything from there on is junk."""
    if at_end and depth == 0 and state in ("where", "having", "on") and _column_value_last(tokens, index):
        junk_start = tokens[index - 1].end + 1
        read_on = _swallowed(sql[junk_start:], state)
        if read_on is not None:
            return OfficialReading(sql[:junk_start] + read_on)
    if depth != 0 or state not in _CLEAN_STOPS or last is None or last.token_type in _DANGLING:
        return OfficialReading(None, what)
    if state == "limit" and last.token_type != TokenType.NUMBER:
        return OfficialReading(None, what)
    if state == "block" and last.token_type != TokenType.R_PAREN:
        return OfficialReading(None, what)  # the junk starts right after the block's ")"
    start = tokens[index].start if index < len(tokens) else len(sql)
    junk_start = tokens[index - 1].end + 1
    if state == "order" and last.token_type not in (TokenType.ASC, TokenType.DESC):
        if sql[junk_start:start].lstrip().startswith("/") or (
                index < len(tokens) and tokens[index].token_type in (TokenType.SLASH, TokenType.STAR,
                                                                     TokenType.PLUS, TokenType.DASH)):
            return OfficialReading(None, what)  # read as arithmetic on the ORDER BY item
    return OfficialReading(sql[:junk_start])


def _collate_at(sql: str, tokens: list[Token], index: int, depth: int, state: str | None, last: Token | None,
                dialect: str) -> OfficialReading:
    """``COLLATE x`` at ``tokens[index]``: a word the official parser does not know. After a condition's column value
    (``ON a = b COLLATE NOCASE``) its value scanner passes over it to the next stop word and the query reads on;
    anywhere else it is junk (``ORDER BY name COLLATE NOCASE`` reads ``ORDER BY name`` and ignores the rest)."""
    if depth == 0 and state in ("where", "having", "on") and _column_value_last(tokens, index):
        stop = next((j for j in range(index + 1, len(tokens))
                     if tokens[j].text.lower().split()[0] in _SCANNER_STOPS), None)
        end = tokens[stop].start if stop is not None else len(sql)
        return official_reading(sql[:tokens[index].start] + sql[end:], dialect)
    return _junk_at(sql, tokens, index, depth, state, last, "collate", at_end=True)


def _clause_walk(tokens: list[Token]) -> Iterator[tuple[int, str | None]]:
    """For each token, where the official parser stands after reading it: the parenthesis depth and the clause it
    is in at the top (``"block"`` right after the ``)`` that closes a parenthesised query at the top)."""
    depth, state, block = 0, None, False
    for i, token in enumerate(tokens):
        kind = token.token_type
        if kind == TokenType.L_PAREN:
            block = block or _opens_block(tokens, i, depth)
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth == 0 and block:
                state, block = "block", False
        elif depth == 0 and kind in _CLAUSES:
            state = _CLAUSES[kind]
        yield depth, state


def _opens_block(tokens: list[Token], index: int, depth: int) -> bool:
    """A top-level ``(`` that opens the query, or the query after a set operation."""
    return depth == 0 and (index == 0 or tokens[index - 1].token_type in _SET_OPERATORS)


def _after_set_operation(tokens: list[Token], close: int) -> bool:
    """Whether the top-level block that ``tokens[close]`` (a ``)``) closes follows a set operator."""
    depth = 0
    for index in range(close, -1, -1):
        kind = tokens[index].token_type
        depth += 1 if kind == TokenType.R_PAREN else -1 if kind == TokenType.L_PAREN else 0
        if depth == 0:
            return index > 0 and tokens[index - 1].token_type in _SET_OPERATORS
    return False


def _word_boundary(sql: str, before: Token, after: Token) -> bool:
    """Whether NLTK ends a word between two of sqlglot's tokens: space (or a comment) between them, a
    character it always splits off on either side, or a run of periods (``..``) starting or ending there."""
    return (after.start > before.end + 1 or sql[before.end] in NLTK_SEPARATORS
            or sql[after.start] in NLTK_SEPARATORS
            or sql[after.start : after.start + 2] == ".." or sql[max(before.end - 1, 0) : before.end + 1] == "..")


def _column_value_last(tokens: list[Token], index: int) -> bool:
    """Whether the tokens before ``index`` end with a condition whose value is a column (``a != b``, ``= T1.b``;
    not ``= "x"``, a string to the official tokenizer)."""
    end = index - 3 if index >= 3 and tokens[index - 2].token_type == TokenType.DOT else index - 1
    return (end >= 1 and tokens[index - 1].token_type == TokenType.VAR and tokens[end].token_type == TokenType.VAR
            and tokens[end - 1].token_type in _COMPARISONS)


def _without_swallowed_comments(sql: str, tokens: list[Token]) -> str | None:
    """The text without the comments that follow a column value and hold no stop word (the official value
    scanner swallows them with the tokens after them, up to the next stop word); None when there is none."""
    pieces, kept = [], 0
    for i in range(1, len(tokens)):
        start, end = tokens[i - 1].end + 1, tokens[i].start
        if _gap(sql, start, end) and _column_value_last(tokens, i) and _swallowed(sql[start:end], None) == "":
            pieces += [sql[kept:start], " "]
            kept = end
    return "".join([*pieces, sql[kept:]]) if pieces else None


def _swallowed(junk: str, state: str | None) -> str | None:
    """The official value scanner reads a column value up to ``,``, ``)``, ``and`` or a clause or join keyword,
    and ignores the rest of the tokens it passed: the junk is harmless (``""``) unless it holds a stop word from
    which the parser goes on and fails (``and``, ``,``, ``group``/``order``, a set operation: None), or ``limit``,
    which it reads as a LIMIT clause (``" LIMIT 1"``; every LIMIT reads as 1). ``state``: the clause of the
    condition (None: any stop word is None)."""
    words = "".join(f" {char} " if char in _NLTK_STOPS else char for char in junk.lower()).split()
    for word in words:
        word = word.rstrip(".:;!?")
        if word in _SCANNER_STOPS:
            if state is None:
                return None
            return " LIMIT 1" if word == "limit" else "" if word in _STOPS_CLEANLY[state] else None
    return ""


def _tokens_and_text(sql: str, dialect: str) -> tuple[list[Token] | None, str]:
    """sqlglot's tokens of ``sql``; when the text does not tokenize (a stray backtick fence), those of the
    longest prefix before the first backtick, if that prefix tokenizes (the rest is junk)."""
    try:
        return tokenize_bounded(sql, dialect), sql
    except sqlglot.errors.TokenError:
        pass
    cut = sql.find("`")
    if cut <= 0:
        return None, sql
    try:
        tokens = tokenize_bounded(sql[:cut], dialect)
    except sqlglot.errors.TokenError:
        return None, sql
    if not tokens:
        return None, sql
    # keep the junk as a trailing "comment" so the caller decides on it like any junk
    return tokens, sql


def _gap(sql: str, start: int, end: int) -> bool:
    """Whether the text between two tokens holds more than white space (a comment, or junk)."""
    return bool(sql[start:end].strip())
