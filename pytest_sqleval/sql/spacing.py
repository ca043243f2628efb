"""White space between tokens: one line of SQL that means what the text meant.

Splitting a SQL text on white space changes it where white space is part of a value: ``name = 'a  b'`` is no
``name = 'a b'``, and a tab inside a quoted name is the name's. Here sqlglot's tokenizer says where each token
starts and ends; only the gaps between tokens become one space.
"""

from __future__ import annotations


def collapse_white_space(sql: str, dialect: str = "sqlite") -> str:
    """``sql`` stripped, each run of white space between tokens (and around a ``/* comment */`` between them) one
    space; white space inside a string literal, a quoted name or a comment kept. Text the tokenizer refuses comes
    back stripped and otherwise as written. A ``--`` comment is kept as it is (its line break ends it)."""
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
            parts.append(" " if not gap.strip() else f" {' '.join(gap.split())} ")  # a /* comment */ between tokens
        parts.append(sql[token.start:token.end + 1])
        position = token.end + 1
    rest = sql[position:].strip()
    if rest:  # a trailing /* comment */
        parts.append(f" {' '.join(rest.split())}")
    return "".join(parts) if parts else sql.strip()
