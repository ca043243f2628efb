"""Text-level behaviour of the official Spider tokenizer that a syntax tree cannot show.

The official ``process_sql.tokenize`` works on the raw string: it turns every
``'`` into ``"`` and asserts an even number of quote characters, replaces each
quoted span by a placeholder word, lower-cases and splits the rest with NLTK's
``word_tokenize``, and joins ``!``, ``>`` or ``<`` with a following ``=`` token.
The consequences reproduced here, all read from sqlglot's token stream:

* an odd number of quote characters (``"Men's"``) fails the assertion, and a
  quote inside a string (``'Men''s'``) breaks the string into pieces;
* ``! =``, ``> =`` and ``< =`` written with a space are one operator
  (:func:`join_spaced_comparisons` rewrites them before sqlglot parses);
* ``<>`` and ``==`` become two tokens, which the condition parser rejects;
* NLTK splits off brackets, ``<``, ``>``, ``!``, ``*``, ``%``, ``,`` and a few
  other characters, but never ``=``, ``+``, ``-`` or ``/``: ``Year=2014``,
  ``name='x'`` or ``a-b`` become single tokens the parser cannot read;
* a table alias is recognised only after the keyword ``AS`` (the alias
  pre-pass maps the token after each ``as``), so ``FROM singer s`` fails;
* clauses are read in the fixed order WHERE, GROUP BY, HAVING, ORDER BY,
  LIMIT; the parser stops at the first clause out of that order. At the end of
  the statement the rest is silently ignored (``GROUP BY a WHERE b`` loses its
  WHERE); inside a subquery or before a set operation the parse fails
  (:func:`read_clause_order`).

test-suite-sql-eval also rewrites every prediction with
``replace("value", "1")`` before parsing (a placeholder convention of old
SParC/CoSQL baselines); :func:`apply_value_placeholder` reproduces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import sqlglot
from sqlglot import Token, TokenType, exp

from ...sql.limits import tokenize_bounded

#: Characters NLTK's word_tokenize always splits off (so they separate tokens).
NLTK_SEPARATORS = frozenset("()[]{}<>!?*%;@#$&,")
#: Operator tokens that sqlglot accepts but the official tokenizer splits in two.
_SPLIT_OPERATORS = ("<>", "==", "<=>")
#: Operators NLTK never splits off: they must stand between separators.
_GLUEABLE = {TokenType.EQ: "both", TokenType.GTE: "right", TokenType.LTE: "right", TokenType.NEQ: "right",
             TokenType.PLUS: "both", TokenType.SLASH: "both", TokenType.DASH: "both"}
_OPERAND_TOKENS = frozenset({TokenType.VAR, TokenType.NUMBER, TokenType.STRING, TokenType.IDENTIFIER,
                             TokenType.R_PAREN, TokenType.STAR})
_JOINABLE_PREFIXES = ("!", ">", "<")
_CLAUSE_RANKS = {TokenType.WHERE: ("where", 1), TokenType.GROUP_BY: ("group", 2), TokenType.HAVING: ("having", 3),
                 TokenType.ORDER_BY: ("order", 4), TokenType.LIMIT: ("limit", 5)}
_SET_OPERATOR_TOKENS = frozenset({TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT})
#: What NLTK's final-period rule lets stand between the period and the end (its quotes excepted: see
#: :func:`split_final_period`).
_FINAL_PERIOD_TAIL = frozenset("])}>»”’ ")

Segment = list[tuple[str, int, int]]  # (clause, rank, start offset)


@dataclass(frozen=True)
class ClauseOrder:
    """Clauses the official parser never reaches at the end of the statement, and whether it fails elsewhere."""

    dropped_at_end: tuple[str, ...] = ()
    misplaced_elsewhere: bool = False
    dropped_from: int | None = None  # where the dropped clauses start in the text


def apply_value_placeholder(sql: str) -> str:
    """test-suite-sql-eval's literal text rewrite of every prediction (official quirk, on purpose)."""
    return sql.replace("value", "1")


def split_final_period(sql: str) -> str:
    """``... > 5.`` -> ``... > 5 .``: NLTK splits a period off the end of the text, as the end of a sentence.

    Its rule (in the NLTK the official evaluator runs): ``([^.])(\\.)([\\])}>"'»”’ ]*+)\\s*$``, a period not after
    another one, followed only by closing brackets, quotes and spaces to the end. A number written ``5.`` as
    the last word loses its period, and the official parser then reads a ``.`` that fails a condition (but not
    a top-level ``LIMIT``, after which it reads nothing). The official tokenizer has already replaced every
    quoted string by a word, so a quote ends the run: the period inside ``'Mr.'`` is never split.
    """
    end = len(sql.rstrip())
    start = end
    while start and sql[start - 1] in _FINAL_PERIOD_TAIL:
        start -= 1
    if start < 2 or sql[start - 1] != "." or sql[start - 2] == ".":
        return sql
    return f"{sql[:start - 1]} {sql[start - 1:]}"


#: The mark of a word that starts with digits (:func:`mark_digit_words`); the reader drops it from names.
DIGIT_WORD = "__digit_word__"


def mark_digit_words(sql: str, dialect: str) -> str:
    """``18_49_Rating_Share`` -> ``__digit_word__18_49_Rating_Share``: NLTK keeps a word that starts with digits
    whole (a tvshow column; ``T1.18_49_Rating_Share`` too), where sqlglot reads a number and then a name (an
    alias). Marked, it is the name the official parser looks up (``2abc``: no such column, as officially)."""
    tokens = _tokens(sql, dialect)
    starts = [number.start for number, name in pairwise(tokens)
              if number.token_type is TokenType.NUMBER and name.token_type is TokenType.VAR
              and number.end + 1 == name.start]
    if not starts:
        return sql
    pieces, kept_from = [], 0
    for start in starts:
        pieces += [sql[kept_from:start], DIGIT_WORD]
        kept_from = start
    pieces.append(sql[kept_from:])
    return "".join(pieces)


def mark_periods_in_words(sql: str, dialect: str) -> str:
    """``ORDER BY a DESC.;`` -> ``ORDER BY a DESC__period;``: a period glued to the end of a word (before a space,
    a bracket, ``;`` or ``,``) stays part of that word for NLTK, which splits off only the text's final period
    (:func:`split_final_period`) and runs of periods. The official parser then meets a word it does not know
    (``desc.``: no direction, ``age.``: no such column, ``t1.``: a qualifier without a column), and so does
    sqlglot with the period made part of the word. A number's period is its own (``5.``), a qualifier's is
    followed by its column (``T1.name``), and a period in a string or a comment is no token."""
    tokens = _tokens(sql, dialect)
    cuts = []
    for previous, token in pairwise(tokens):
        if token.token_type is not TokenType.DOT or previous.token_type is TokenType.NUMBER:
            continue
        before, after = sql[token.start - 1 : token.start], sql[token.end + 1 : token.end + 2]
        glued_left = previous.end + 1 == token.start and not _separates(sql, token.start - 1) and before != "."
        if glued_left and (not after or after.isspace() or after in NLTK_SEPARATORS):
            cuts.append(token.start)
    if not cuts:
        return sql
    pieces, kept_from = [], 0
    for cut in cuts:
        pieces.append(sql[kept_from:cut])
        pieces.append("__period")
        kept_from = cut + 1
    pieces.append(sql[kept_from:])
    return "".join(pieces)


def join_spaced_comparisons(sql: str, dialect: str) -> str:
    """``a ! = b`` -> ``a != b``: the official tokenizer joins the two tokens across spaces."""
    tokens = _tokens(sql, dialect)
    cuts = [
        (first.end + 1, second.start)
        for first, second in pairwise(tokens)
        if first.text in _JOINABLE_PREFIXES and second.text == "=" and second.start > first.end + 1
        and not sql[first.end + 1 : second.start].strip()
    ]
    if not cuts:
        return sql
    pieces, kept_from = [], 0
    for start, end in cuts:  # in text order; one join, not one copy of the text per cut
        pieces.append(sql[kept_from:start])
        kept_from = end
    pieces.append(sql[kept_from:])
    return "".join(pieces)


def tokenizer_objection(sql: str, dialect: str, end: int | None = None) -> str | None:
    """The construct name when the official tokenizer/parser would reject ``sql`` for a text reason (tokens from
    offset ``end`` on, clauses the parser never reaches, are not looked at; the quote count covers all)."""
    if sum(1 for char in sql if char in "'\"") % 2:
        return "unbalanced_quotes"
    tokens = _tokens(sql, dialect)
    for index, token in enumerate(tokens):
        if end is not None and token.start >= end:
            break
        if token.text in _SPLIT_OPERATORS:
            return token.text
        if _quoted_text(sql, token) and _quote_inside(sql, token):  # ``'it''s'``, ``"say ""hi"""``: doubled quotes
            return "quote_inside_string"
        if _glued(sql, tokens, index):
            return "operator_without_spaces"
        if token.token_type is TokenType.L_PAREN and _query_in_nested_parentheses(tokens, index):
            return "nested_parentheses"  # ``IN ((SELECT ...))``: the official reads one "(" before "select"
        if token.token_type is TokenType.PLUS and _is_sign(tokens, index) and not _plus_read(tokens, index):
            return "unary_plus"  # sqlglot drops it; the official parser reads "+" as a column and fails
        if token.token_type is TokenType.ALL and index and tokens[index - 1].token_type not in _ALL_READ_AFTER:
            return "all"  # sqlglot drops ``SELECT ALL``/``count(ALL x)``; the official reads "all" as a column
        if token.token_type is TokenType.DISTINCT and index > 1 and tokens[index - 1].token_type is TokenType.NOT \
                and tokens[index - 2].token_type is TokenType.IS:
            return "is_not_distinct_from"  # read by sqlglot as ``a IS b``; the official fails on "not"
        if token.token_type is TokenType.TRUE and index and tokens[index - 1].token_type is TokenType.ON:
            return "boolean"  # ``JOIN t ON TRUE``: sqlglot's tree of a bare JOIN; the official fails on "true"
    return None


#: Where an ``ALL`` token is read otherwise: a LIMIT's value (skipped unread), ``UNION ALL`` (its own construct).
_ALL_READ_AFTER = frozenset({TokenType.LIMIT, TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT})


def _plus_read(tokens: list[Token], index: int) -> bool:
    """A unary plus the official parser gets past: glued to a number (``+40``, float() reads it) or a LIMIT's."""
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    glued_number = (following is not None and following.token_type is TokenType.NUMBER
                    and following.start == tokens[index].end + 1)
    return glued_number or (index > 0 and tokens[index - 1].token_type is TokenType.LIMIT)


def read_clause_order(sql: str, dialect: str) -> ClauseOrder:
    """Where the clause keywords of every SELECT of ``sql`` break the official reading order."""
    top: list[Segment] = [[]]
    stack: list[list[Segment] | None] = [top]
    closed: list[list[Segment]] = []
    tokens = _tokens(sql, dialect)
    for index, token in enumerate(tokens):
        if token.token_type is TokenType.SEMICOLON and len(stack) == 1:
            break  # statements after the first are never read
        if token.token_type is TokenType.L_PAREN:
            opens_query = index + 1 < len(tokens) and tokens[index + 1].token_type is TokenType.SELECT
            stack.append([[]] if opens_query else None)
        elif token.token_type is TokenType.R_PAREN and len(stack) > 1:
            context = stack.pop()
            if context is not None:
                closed.append(context)
        else:
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            previous = tokens[index - 1] if index else None
            in_call = stack[-1] is None  # inside parentheses that hold no query (a function's arguments)
            _record_clause(next(c for c in reversed(stack) if c is not None), token, following,
                           previous=None if in_call else previous)
    inner_segments = [segment for context in closed for segment in context] + top[:-1]
    dropped = _unread_clauses(top[-1])
    return ClauseOrder(
        dropped_at_end=tuple(name for name, _, _ in dropped),
        misplaced_elsewhere=any(_unread_clauses(segment) for segment in inner_segments),
        dropped_from=dropped[0][2] if dropped else None,
    )


def _record_clause(context: list[Segment], token: Token, following: Token | None, *,
                   previous: Token | None = None) -> None:
    if token.token_type in _SET_OPERATOR_TOKENS:
        context.append([])
    elif token.token_type in _CLAUSE_RANKS:
        context[-1].append((*_CLAUSE_RANKS[token.token_type], token.start))
    elif context[-1] and context[-1][-1][0] == "order" and _ends_order_by(token, following, previous):
        # the official ORDER BY reader stops at ``NULLS FIRST/LAST``, ``FETCH`` or a predicate after an item (``a IS
        # NULL``, ``a > 3``): like a clause out of order, what follows (a LIMIT; FETCH is sqlglot's LIMIT) is never
        # read, and the reader keeps the ORDER BY items up to there (ORDER_STOP)
        context[-1].append(("limit" if token.token_type is TokenType.FETCH else ORDER_STOP, 0, token.start))


#: The name of the point where the official ORDER BY reader stops (in ``ClauseOrder.dropped_at_end``).
ORDER_STOP = "order_stop"
#: Tokens after an ORDER BY item at which the official reader stops (its loop reads an item, then an optional
#: ASC/DESC and a ``,``; anything else ends the ORDER BY).
_PREDICATE_TOKENS = frozenset({TokenType.IS, TokenType.EQ, TokenType.NEQ, TokenType.GT, TokenType.GTE, TokenType.LT,
                               TokenType.LTE, TokenType.LIKE, TokenType.IN, TokenType.BETWEEN, TokenType.GLOB})
_OPERAND_END_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.R_PAREN, TokenType.NUMBER,
                                 TokenType.STRING, TokenType.STAR})


def _ends_order_by(token: Token, following: Token | None, previous: Token | None) -> bool:
    if token.token_type is TokenType.FETCH:
        return True
    if previous is not None and previous.token_type in _OPERAND_END_TOKENS and (
            token.token_type in _PREDICATE_TOKENS or (token.token_type is TokenType.NOT and following is not None
                                                      and following.token_type in _PREDICATE_TOKENS)):
        return True  # ``ORDER BY a IS NULL, a``, ``a NOT IN (...)``: read as ``ORDER BY a``
    return (token.token_type is TokenType.VAR and token.text.lower() == "nulls" and following is not None
            and following.text.lower() in ("first", "last"))


def _unread_clauses(segment: Segment) -> Segment:
    """The clauses from the first one out of order on: the official parser never reads them."""
    rank = 0
    for position, (_, clause_rank, _) in enumerate(segment):
        if clause_rank <= rank:
            return segment[position:]
        rank = clause_rank
    return []


def written_in_double_quotes(sql: str, identifier: exp.Identifier) -> bool:
    """A quoted identifier written ``"x"`` (a string value to the official parser), not ``[x]`` or `` `x` ``."""
    start = identifier.meta.get("start")
    return identifier.quoted and start is not None and sql[start : start + 1] == '"'


def alias_written_with_as(sql: str, name: exp.Identifier, alias: exp.Identifier) -> bool:
    """Whether the text between a table name and its alias is the keyword ``AS``."""
    end = name.meta.get("end")
    start = alias.meta.get("start")
    if end is None or start is None:
        return True
    return sql[end + 1 : start].strip().lower() == "as"


def _tokens(sql: str, dialect: str) -> list[Token]:
    """The tokens (read only; cached by :func:`~pytest_sqleval.sql.limits.tokenize_bounded`).

    Raises :class:`~pytest_sqleval.sql.limits.SqlTooComplex` for text beyond the limits.
    """
    try:
        return tokenize_bounded(sql, dialect)
    except sqlglot.errors.TokenError:
        return []  # the parser reports it


def _glued(sql: str, tokens: list[Token], index: int) -> bool:
    """Whether NLTK would leave this operator stuck to a neighbouring word."""
    token = tokens[index]
    sides = _GLUEABLE.get(token.token_type)
    if sides is None:
        return False
    if token.token_type is TokenType.DASH and _is_sign(tokens, index):
        return False
    if (token.token_type is TokenType.PLUS and _is_sign(tokens, index) and index + 1 < len(tokens)
            and tokens[index + 1].token_type is TokenType.NUMBER and tokens[index + 1].start == token.end + 1):
        return False  # "+40" is one token, which float() reads
    right_glued = not _separates(sql, token.end + 1)
    left_glued = not _separates(sql, token.start - 1)
    return right_glued or (sides == "both" and left_glued)


def _query_in_nested_parentheses(tokens: list[Token], index: int) -> bool:
    """``tokens[index]`` is a ``(`` directly followed by more ``(`` and then ``SELECT``: the official parser reads
    at most one ``(`` before a query (``parse_sql``, ``parse_from``, ``parse_value``) and fails on the second."""
    following = index + 1
    while following < len(tokens) and tokens[following].token_type is TokenType.L_PAREN:
        following += 1
    return following > index + 1 and following < len(tokens) and tokens[following].token_type is TokenType.SELECT


def _quoted_text(sql: str, token: Token) -> bool:
    """A string, or an identifier written in double quotes (a string value to the official tokenizer)."""
    if token.token_type is TokenType.STRING:
        return True
    return token.token_type is TokenType.IDENTIFIER and sql[token.start : token.start + 1] == '"'


def _quote_inside(sql: str, token: Token) -> bool:
    inner = sql[token.start + 1 : token.end]
    return "'" in inner or '"' in inner


def _is_sign(tokens: list[Token], index: int) -> bool:
    """A unary minus stays with its number (``-1``), which the official parser reads as a float."""
    previous = tokens[index - 1] if index else None
    return previous is None or previous.token_type not in _OPERAND_TOKENS


def _separates(sql: str, position: int) -> bool:
    if position < 0 or position >= len(sql):
        return True
    char = sql[position]
    return char.isspace() or char in NLTK_SEPARATORS
