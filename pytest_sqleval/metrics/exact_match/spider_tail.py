"""What the official Spider parser reads of a prediction with comments or junk (profile ``spider`` only).

The official ``process_sql.py`` tokenizes with NLTK, which knows no comments: ``--``, ``/*``, ``*/`` and the
comment's words become ordinary tokens. Its recursive parser reads clause after clause and, once the query is
complete, **stops and ignores the rest** (``get_sql`` never checks that every token was used). So:

* text after a top-level ``;`` or an unmatched ``)`` is never read, except a set operation after ``;`` (``parse_sql``
  skips ``;`` before it, and before the ``)`` that closes a subquery: :func:`fill_bare_clauses` drops those ``;``),
  and the token right after ``LIMIT`` is its value whatever it is (``LIMIT ) UNION ...``, ``IN (... LIMIT ))``);
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
    if tokens[-1].token_type == TokenType.ALIAS and not _gap(sql, tokens[-1].end + 1, len(sql)):
        # the official alias scan reads the token after every ``as`` (get_tables_with_alias): none after the last
        return OfficialReading(None, "as_at_end")
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
        if kind == TokenType.HAVING and _column_value_last(tokens, i):
            here = state if depth == 0 else _clause_in_parentheses(tokens, i)
            if here in ("where", "on"):
                # HAVING without GROUP BY: not a clause keyword to the official value scanner, which passes over
                # it after a column value (``ON a = b HAVING count(*) > 1`` reads ``ON a = b``), as over COLLATE
                return _scanned_over(sql, tokens, i, depth, here, dialect)
        if kind == TokenType.COMMA and (i + 1 == len(tokens) or tokens[i + 1].token_type in _ITEM_STOPS):
            # ``count(*, )``, ``FROM t, )``: what follows is read as the next item, and fails (the commas the item
            # loops of SELECT, GROUP BY and ORDER BY skip are gone: fill_bare_clauses)
            return OfficialReading(None, "trailing_comma")
        if kind in (TokenType.ORDER_BY, TokenType.LIMIT) and depth and _in_function(tokens, i):
            return OfficialReading(None, "clause_in_function")  # ``count(* ORDER BY 1)``: read as an argument
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


#: The ORDER BY item a bare ``ORDER BY`` is read with (:func:`fill_bare_clauses`); the reader reads it as none.
BARE_ORDER_BY = "__sqleval_bare_order_by__"
#: The LIMIT value of a ``LIMIT`` at the very end (:func:`fill_bare_clauses`): the reader fails if it reads it.
LIMIT_WITHOUT_VALUE = "__sqleval_limit_without_value__"
#: Where the official SELECT/GROUP BY/ORDER BY item loops stop (its clause keywords, ``)``, ``;``).
_ITEM_STOPS = frozenset({TokenType.SELECT, TokenType.FROM, TokenType.WHERE, TokenType.GROUP_BY,
                         TokenType.ORDER_BY, TokenType.LIMIT, TokenType.UNION, TokenType.INTERSECT,
                         TokenType.EXCEPT, TokenType.R_PAREN, TokenType.SEMICOLON})
#: Clauses after which a ``HAVING`` at the end is never read (ORDER BY items, a LIMIT's value).
_HAVING_IGNORED_AFTER = frozenset({"order", "limit"})


def fill_bare_clauses(sql: str, dialect: str) -> str:
    """The text, before :func:`official_reading`, with the clauses the official parser reads with nothing in them
    (or never reaches) made readable for sqlglot (which rejects them all):

    * ``ORDER BY`` followed by nothing, ``)``, ``;`` or a clause keyword is an ORDER BY of no items
      (``("asc", [])``, which counts as an ORDER BY): the :data:`BARE_ORDER_BY` item is added, read as none;
    * ``GROUP BY`` there is no GROUP BY: dropped;
    * a ``WHERE`` at the very end is a condition of no units, or never read (after another clause): dropped;
      before ``;`` it fails (``;`` is read as a column) unless never read; a ``HAVING`` at the end after GROUP BY
      items, ORDER BY items, a LIMIT's value or a condition's column value: dropped (none, never read, or passed
      over by the value scanner);
    * a ``LIMIT`` followed by ``;`` or an unmatched ``)`` reads that token as its value: ``LIMIT 1`` (the token is
      replaced in a subquery and before a set operation, where the parser reads on after it); at the very
      end it fails when it is read (:data:`LIMIT_WITHOUT_VALUE`, for the reader: it may never be read);
    * ``;`` before a set operation (``q; UNION q2``), or in parentheses before the ``)`` that closes the query, is
      skipped by ``parse_sql``: dropped;
    * a ``,`` that ends SELECT, GROUP BY or ORDER BY items before a clause keyword (``ORDER BY a, LIMIT 1``), or
      the GROUP BY/ORDER BY items before ``)``, ``;`` or the end, is skipped by the item loop: dropped.

    A comment right after the keyword is read as a word, and fails: not bare."""
    tokens, text = _tokens_and_text(sql, dialect)
    if not tokens or text is not sql or not _may_be_bare(tokens):
        return sql
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in text order
    walk = list(_clause_walk(tokens))
    inner = _clauses_in_parentheses(tokens)
    consumed = 0  # the ``)`` read as a LIMIT's value so far
    for i, token in enumerate(tokens):
        kind = token.token_type
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if _gap(sql, token.end + 1, following.start if following is not None else len(sql)):
            continue  # a comment's words are read: the official parser fails on them (or they are junk)
        previous = tokens[i - 1] if i else None
        if previous is None or previous.token_type in _DANGLING or previous.token_type == TokenType.LIMIT:
            continue  # ``LIMIT WHERE``: the word is the LIMIT's value
        ends = following is None or following.token_type in _ITEM_STOPS
        at_end = following is None or (following.token_type == TokenType.SEMICOLON and walk[i][0] == 0)
        state = walk[i - 1][1] if walk[i - 1][0] == 0 else inner[i]
        if state is None:
            continue  # inside a function's parentheses (``count(* ORDER BY)``): no clause of a query
        if kind == TokenType.ORDER_BY and ends:
            edits.append((token.end + 1, token.end + 1, f" {BARE_ORDER_BY}"))
        elif kind == TokenType.GROUP_BY and ends:
            edits.append((token.start, token.end + 1, ""))
        elif kind == TokenType.WHERE and at_end and walk[i][0] == 0 and (following is None
                                                                        or state not in ("from", "on")):
            edits.append((token.start, token.end + 1, ""))
        elif kind == TokenType.HAVING and at_end and walk[i][0] == 0 and (
                (state == "group" and previous.token_type != TokenType.GROUP_BY) or state in _HAVING_IGNORED_AFTER
                or (state in ("where", "having", "on") and _column_value_last(tokens, i))):
            edits.append((token.start, token.end + 1, ""))
        elif kind == TokenType.LIMIT and walk[i][0] == 0 and following is None:
            edits.append((token.end + 1, token.end + 1, f" {LIMIT_WITHOUT_VALUE}"))
        elif kind == TokenType.LIMIT and following is not None and following.token_type in (
                TokenType.SEMICOLON, TokenType.R_PAREN) and (
                walk[i][0] > 0 or _after_semicolons(sql, tokens, i + 2) in _SET_OPERATORS):
            # the token is the LIMIT's value, whatever it is: in a subquery ``LIMIT ; )`` and ``LIMIT ))`` are
            # ``LIMIT 1)``, and ``LIMIT ) UNION ...``, ``LIMIT ; UNION ...`` read on to the set operation
            edits.append((token.end + 1, following.end + 1, " 1"))
            consumed += following.token_type == TokenType.R_PAREN  # (so the parentheses are one deeper after it)
        elif kind == TokenType.LIMIT and walk[i][0] == 0 and following is not None and following.token_type in (
                TokenType.SEMICOLON, TokenType.R_PAREN):
            edits.append((token.end + 1, token.end + 1, " 1"))  # read as its value; the parser stops after it
        elif kind == TokenType.SEMICOLON and (_after_semicolons(sql, tokens, i + 1) in _SET_OPERATORS or (
                walk[i][0] + consumed > 0 and _after_semicolons(sql, tokens, i + 1) == TokenType.R_PAREN)):
            # ``parse_sql`` skips the ``;`` after a query's clauses, then reads a set operation (``q; UNION q2``)
            # or, in parentheses, the ``)`` that closes the query (``(SELECT ... LIMIT 1;)``)
            edits.append((token.start, token.end + 1, " "))
        elif kind == TokenType.COMMA and state in ("select", "group", "order") and (
                following is None or following.token_type in _ITEM_STOPS) and (
                state != "select" or (following is not None and following.token_type not in (
                    TokenType.R_PAREN, TokenType.SEMICOLON))):
            edits.append((token.start, token.end + 1, ""))
    pieces, kept = [], 0
    for start, end, replacement in edits:
        pieces += [sql[kept:start], replacement]
        kept = end
    return "".join([*pieces, sql[kept:]])


#: The tokens :func:`fill_bare_clauses` may edit; each only when what follows it ends the clause (an item stop).
_MAY_BE_BARE = frozenset({TokenType.ORDER_BY, TokenType.GROUP_BY, TokenType.WHERE, TokenType.HAVING,
                          TokenType.LIMIT, TokenType.COMMA, TokenType.SEMICOLON})


def _after_semicolons(sql: str, tokens: list[Token], index: int) -> TokenType | None:
    """The kind of the first token from ``tokens[index]`` on that is not ``;``, when only ``;`` and white space come
    before it (None: the end, or a comment's words first). The official ``parse_sql`` skips those ``;`` and reads
    a set operation next (``q; UNION q2``) or, in parentheses, the ``)`` that closes the query."""
    for j in range(index, len(tokens)):
        if _gap(sql, tokens[j - 1].end + 1, tokens[j].start):
            return None
        if tokens[j].token_type != TokenType.SEMICOLON:
            return tokens[j].token_type
    return None


def _may_be_bare(tokens: list[Token]) -> bool:
    """Whether any token :func:`fill_bare_clauses` edits is followed by the end or an item stop: every one of its
    edits needs that, so a text without one is returned as it is, before its clause walk (most texts)."""
    last = len(tokens) - 1
    return any(token.token_type in _MAY_BE_BARE and (i == last or tokens[i + 1].token_type in _ITEM_STOPS)
               for i, token in enumerate(tokens))


#: The official reading order of the clauses (keywords and the states of :func:`_clause_walk`).
_CLAUSE_RANK: dict[object, int] = {
    "select": 0, "from": 0, "on": 0, "where": 1, "group": 2, "having": 3, "order": 4, "limit": 5,
    TokenType.WHERE: 1, TokenType.GROUP_BY: 2, TokenType.HAVING: 3, TokenType.ORDER_BY: 4, TokenType.LIMIT: 5,
}


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
        if tokens[cut].token_type in _SET_OPERATORS:
            continue  # not junk: ``parse_sql`` reads a set operation after any clause (``... LIMIT 1 UNION`` fails)
        if _CLAUSE_RANK.get(tokens[cut].token_type, 0) > _CLAUSE_RANK.get(state or "", 6):
            continue  # not junk: the clause the official parser reads next (``GROUP BY a ORDER BY -- c`` fails)
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
    if last.token_type in (TokenType.ORDER_BY, TokenType.GROUP_BY) and _clause_read(tokens, index - 1):
        return OfficialReading(None, what)  # right after GROUP BY/ORDER BY read: its first word is an item, fails
    if state == "block" and last.token_type != TokenType.R_PAREN:
        return OfficialReading(None, what)  # the junk starts right after the block's ")"
    start = tokens[index].start if index < len(tokens) else len(sql)
    junk_start = tokens[index - 1].end + 1
    if state == "order" and last.token_type not in (TokenType.ASC, TokenType.DESC) and _order_by_read(tokens, index):
        if sql[junk_start:start].lstrip().startswith("/") or (
                index < len(tokens) and tokens[index].token_type in (TokenType.SLASH, TokenType.STAR,
                                                                     TokenType.PLUS, TokenType.DASH)):
            return OfficialReading(None, what)  # read as arithmetic on the ORDER BY item
    return OfficialReading(sql[:junk_start])


def _collate_at(sql: str, tokens: list[Token], index: int, depth: int, state: str | None, last: Token | None,
                dialect: str) -> OfficialReading:
    """``COLLATE x`` at ``tokens[index]``: a word the official parser does not know. After a condition's column value
    (``ON a = b COLLATE NOCASE``) its value scanner passes over it to the next stop word and the query reads on;
    anywhere else it is junk (``ORDER BY name COLLATE NOCASE`` reads ``ORDER BY name`` and ignores the rest).
    The same in a subquery (``IN (SELECT a FROM t WHERE b = c COLLATE NOCASE)``: the scanner stops at ``)``)."""
    here = state if depth == 0 else _clause_in_parentheses(tokens, index)
    if here in ("where", "having", "on") and _column_value_last(tokens, index):
        return _scanned_over(sql, tokens, index, depth, here, dialect)
    if here in ("where", "having", "on") and index + 1 < len(tokens) and _in_scanned_value(tokens, index):
        # ``ON a = b OR c COLLATE RTRIM = d``: inside the text the scanner of ``b`` passes over, to the next stop
        return official_reading(sql[:tokens[index].start] + sql[tokens[index + 1].end + 1:], dialect)
    return _junk_at(sql, tokens, index, depth, state, last, "collate", at_end=True)


def _scanned_over(sql: str, tokens: list[Token], index: int, depth: int, here: str | None,
                  dialect: str) -> OfficialReading:
    """The reading when the official value scanner of the column value before ``tokens[index]`` passes over the
    tokens from there to the next stop word (``,``, ``)``, ``and``, a clause or join keyword): they are dropped.
    A join keyword ends a WHERE/HAVING condition and the query (the parser reads no clause from it): the query
    is read up to ``tokens[index]``, and fails in parentheses (a ``)`` must follow)."""
    stop = next((j for j in range(index + 1, len(tokens))
                 if tokens[j].text.lower().split()[0] in _SCANNER_STOPS), None)
    if stop is not None and here in ("where", "having") and tokens[stop].text.lower().split()[0] in _JOIN_WORDS:
        return OfficialReading(sql[:tokens[index].start]) if depth == 0 else OfficialReading(None, "junk")
    end = tokens[stop].start if stop is not None else len(sql)
    return official_reading(sql[:tokens[index].start] + sql[end:], dialect)


_JOIN_WORDS = frozenset({"join", "on", "as"})


def _in_function(tokens: list[Token], index: int) -> bool:
    """Whether ``tokens[index]`` is directly inside the parentheses of a function call (``count(* ORDER BY a)``,
    which sqlglot reads; not a window's ``OVER (ORDER BY a)``, outside the grammar by its own name)."""
    depth = 0
    for j in range(index - 1, 0, -1):
        kind = tokens[j].token_type
        if kind == TokenType.R_PAREN:
            depth += 1
        elif kind == TokenType.L_PAREN:
            if depth == 0:
                return tokens[j - 1].token_type == TokenType.VAR  # a function's name
            depth -= 1
    return False


def _clause_read(tokens: list[Token], index: int) -> bool:
    """Whether the official parser reads the clause keyword ``tokens[index]`` (it comes after the clauses before it
    in the order WHERE, GROUP BY, HAVING, ORDER BY, LIMIT; not after a LIMIT or a parenthesised block)."""
    before = _clause_in_parentheses(tokens, index)
    return _CLAUSE_RANK.get(tokens[index].token_type, 0) > _CLAUSE_RANK.get(before or "", 6)


def _order_by_read(tokens: list[Token], index: int) -> bool:
    """Whether the ORDER BY whose items end before ``tokens[index]`` (at the top) is read."""
    depth = 0
    for j in range(index - 1, -1, -1):
        kind = tokens[j].token_type
        depth += 1 if kind == TokenType.R_PAREN else -1 if kind == TokenType.L_PAREN else 0
        if depth == 0 and kind == TokenType.ORDER_BY:
            return _clause_read(tokens, j)
    return True


def _clause_in_parentheses(tokens: list[Token], index: int) -> str | None:
    """The clause ``tokens[index]`` is in, within the parentheses around it (None: no clause keyword there)."""
    depth = 0
    for j in range(index - 1, -1, -1):
        kind = tokens[j].token_type
        if kind == TokenType.R_PAREN:
            depth += 1
        elif kind == TokenType.L_PAREN:
            if depth == 0:
                return None
            depth -= 1
        elif depth == 0 and kind in _CLAUSES:
            return _CLAUSES[kind]
    return None


def _clauses_in_parentheses(tokens: list[Token]) -> list[str | None]:
    """:func:`_clause_in_parentheses` of every token, in one pass."""
    levels: list[str | None] = [None]
    states: list[str | None] = []
    for token in tokens:
        kind = token.token_type
        states.append(levels[-1])
        if kind == TokenType.L_PAREN:
            levels.append(None)
        elif kind == TokenType.R_PAREN:
            if len(levels) > 1:
                levels.pop()
        elif kind in _CLAUSES:
            levels[-1] = _CLAUSES[kind]
    return states


def _in_scanned_value(tokens: list[Token], index: int) -> bool:
    """Whether ``tokens[index]`` lies in the text the official value scanner passes over: after the last stop word
    (or ``(``) before it, the first comparison has a column as its value."""
    start = index - 1
    while start >= 0 and tokens[start].token_type != TokenType.L_PAREN \
            and tokens[start].text.lower().split()[0] not in _SCANNER_STOPS:
        start -= 1
    for j in range(start + 1, index - 1):
        if tokens[j].token_type in _COMPARISONS:
            return tokens[j + 1].token_type == TokenType.VAR
    return False


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
    """sqlglot's tokens of ``sql``; when the text does not tokenize, those before an unterminated ``/*`` comment
    at the end, or (a stray backtick fence) those of the longest prefix before the first backtick, if that prefix
    tokenizes (the rest is junk)."""
    try:
        return tokenize_bounded(sql, dialect), sql
    except sqlglot.errors.TokenError:
        pass
    try:  # an unterminated ``/*`` comment (``... LIMIT 1 /* cut off``): to NLTK, words like any junk at the end
        closed = tokenize_bounded(sql + "*/", dialect)
    except sqlglot.errors.TokenError:
        closed = None
    if closed and all(token.end < len(sql) for token in closed):
        return closed, sql  # the comment stays a trailing "comment", decided on like any junk
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
