"""White space between tokens: one line of SQL that means what the text meant.

Splitting a SQL text on white space changes it where white space is part of a value: ``name = 'a  b'`` is no
``name = 'a b'``, and a tab inside a quoted name is the name's. Here sqlglot's tokenizer says where each token
starts and ends; only the gaps between tokens become one space.
"""

from __future__ import annotations

import re


def collapse_white_space(sql: str, dialect: str = "sqlite", *, keep_line_comment_ends: bool = False) -> str:
    """``sql`` stripped, each run of white space between tokens (and around a ``/* comment */`` between them) one
    space; white space inside a string literal, a quoted name or a comment kept. Text the tokenizer refuses comes
    back stripped and otherwise as written. A ``--`` comment's own white space is collapsed too, and what follows
    it joins its line (a display); with ``keep_line_comment_ends`` its line break is kept, so that ``a -- x``
    followed by ``FROM t`` on the next line is never the text with ``FROM t`` inside the comment."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return sql.strip()
    parts: list[str] = []
    position = 0
    for token in tokens:
        gap = sql[position:token.start]
        if parts and gap:
            parts.append(" " if not gap.strip() else f" {_comments(gap, keep_line_comment_ends)} ")  # comments between tokens
        parts.append(sql[token.start:token.end + 1])
        position = token.end + 1
    rest = sql[position:].strip()
    if rest:  # a trailing /* comment */
        parts.append(f" {' '.join(rest.split())}")
    return "".join(parts) if parts else sql.strip()


def _comments(gap: str, keep_line_comment_ends: bool) -> str:
    """The comments of a gap between two tokens (white space and comments only), their white space collapsed; with
    ``keep_line_comment_ends`` each ``--`` comment ends with its line break."""
    if not keep_line_comment_ends or "--" not in gap:
        return " ".join(gap.split())
    pieces: list[str] = []
    position = 0
    while position < len(gap):
        if gap.startswith("/*", position):
            end = gap.find("*/", position + 2)
            end = len(gap) if end < 0 else end + 2
            pieces.append(" ".join(gap[position:end].split()))
        elif gap.startswith("--", position):
            end = gap.find("\n", position)
            end = len(gap) if end < 0 else end
            pieces.append(" ".join(gap[position:end].split()) + "\n")
        else:  # white space (or anything else the tokenizer skipped) up to the next comment
            starts = [start for start in (gap.find("--", position), gap.find("/*", position)) if start >= 0]
            end = min(starts, default=len(gap))
            pieces.append(" ".join(gap[position:end].split()))
        position = end
    return " ".join(piece for piece in pieces if piece)


def reads_dollar_quotes(sql: str) -> bool:
    """Whether ``sql`` holds a PostgreSQL/DuckDB dollar quote (``$$a  b$$``, ``$tag$...$tag$``), which SQLite's
    tokenizer reads as variables (a ``$name`` parameter has no second ``$``)."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        tokens = sqlglot.tokenize(sql, read="sqlite")
    except (SqlglotError, RecursionError, ValueError):
        return False
    return any(token.text.startswith("$") and "$" in token.text[1:] for token in tokens)


#: Whitespace beyond ASCII's that a chat model or an editor writes between words: the no-break spaces, the
#: typographic spaces, the ideographic space, the line and paragraph separators, NEL.
_UNICODE_SPACES = re.compile("[\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def unicode_spaces_normalised(sql: str, dialect: str = "") -> str:
    """``sql`` with each Unicode space between its tokens (outside string literals and quoted names, read by sqlglot's
    tokenizer for ``dialect``) made a plain space. SQLite reads a no-break space between two words as a syntax
    error, DuckDB and PostgreSQL as a space: the same answer must score the same kind on every engine. Inside a
    literal it is data and stays; text the tokenizer cannot read whole is returned as it is."""
    if _UNICODE_SPACES.search(sql) is None:
        return sql
    from sqlglot.dialects.dialect import Dialect

    try:
        tokens = Dialect.get_or_raise(dialect or "").tokenize(sql)
    except Exception:  # noqa: BLE001 - sqlglot's TokenError, an unknown dialect: left as it is
        return sql
    parts, at = [], 0
    for token in tokens:  # between tokens: whitespace and comments (a comment's spaces do not matter)
        parts += [_UNICODE_SPACES.sub(" ", sql[at:token.start]), sql[token.start:token.end + 1]]
        at = token.end + 1
    parts.append(_UNICODE_SPACES.sub(" ", sql[at:]))
    return "".join(parts)
