"""The gate every predicted SQL passes before it reaches an engine.

Predicted SQL is untrusted model output. It runs only if sqlglot reads it, in
the suite's dialect, as exactly one query (SELECT, WITH ... SELECT, VALUES or
a set operation) with no statement or clause that writes, changes settings,
or touches files anywhere in its tree, and if every function it calls is on
its dialect's ALLOWLIST of pure functions
(:mod:`pytest_sqleval.sql.allowed_functions`, extended by the user's
``allow_functions``). Relations that expose secrets or server state (such as
PostgreSQL's ``pg_authid``) are refused as well. Anything else is refused with
kind ``rejected`` (or ``syntax`` when it does not parse) and never executed.
The engines are read-only on their own side as well
(see :mod:`pytest_sqleval.execution.engines`), so a gap here cannot become a
write.

How calls are found: the engine runs the *text*, so every name in sqlglot's
token stream that is followed by ``(`` is a call unless the parsed tree shows
it is something else (an alias's column list, a CTE's name, a type's
modifiers). A call is checked by the name the engine resolves (PostgreSQL
folds unquoted names to lower case and takes quoted names as written; SQLite
and DuckDB ignore case). This does not depend on how sqlglot types a function
(``exp.Upper``, ``exp.Anonymous``, ...), and sqlglot cannot hide a call by
dropping arguments it does not model (it drops those of ``uuid(...)``). Names
whose text differs from what the engine reads (PostgreSQL ``U&"..."``
identifiers with Unicode escapes) are refused as a class.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError, TokenError
from sqlglot.tokens import Token, TokenType

from ..errors import QueryError
from . import allowed_functions as allowlist
from .limits import closed_comment, invalid_text, join_keywords_split_by_comments

#: Longest prediction the guard accepts (characters).
MAX_SQL_LENGTH = 200_000


class NestedTooDeeply(QueryError):
    """The guard's refusal of a query sqlglot cannot read within Python's recursion limit (kind ``rejected``): its
    type, not its text, tells it apart (the runner then asks no engine parser about the text)."""


def _nested_too_deeply() -> NestedTooDeeply:
    return NestedTooDeeply("rejected", "the query is nested too deeply to check")


_QUERY_ROOTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery,
                                               exp.Pivot)  # DuckDB's PIVOT and UNPIVOT statements are read-only queries


def _node_types(*names: str) -> tuple[type[exp.Expression], ...]:
    return tuple(getattr(exp, name) for name in names if hasattr(exp, name))


#: Statement and clause nodes that must not appear anywhere in a prediction.
FORBIDDEN_NODES = _node_types(
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable", "Copy", "Command",
    "Attach", "Detach", "Pragma", "Set", "Install", "Use", "Transaction", "Commit", "Rollback", "LoadData",
    "Into", "Lock", "Grant", "Revoke", "Analyze", "Refresh", "Cache", "Uncache", "Kill", "Export",
    "NextValueFor",
)

#: Which functions a prediction may call is an allowlist per dialect: see
#: :mod:`pytest_sqleval.sql.allowed_functions` (data, reviewed per engine).

#: Suffixes of a table name that is really a file path (DuckDB reads ``FROM 'data.csv'``).
_FILE_SUFFIXES = (".csv", ".tsv", ".parquet", ".json", ".jsonl", ".ndjson", ".txt", ".gz", ".zst", ".xlsx", ".db",
                  ".duckdb", ".sqlite", ".arrow", ".avro")


@dataclass(frozen=True)
class CheckedQuery:
    """A prediction that passed the guard: its text and its sqlglot tree."""

    sql: str
    tree: exp.Expression


def check_prediction(sql: str, dialect: str, *, allow_functions: Iterable[str] = frozenset()) -> CheckedQuery:
    """Return the parsed query, or raise QueryError(kind="syntax" | "rejected").

    ``allow_functions``: the user's own function names (``allow_functions:`` in the suite, the ini option
    ``sqleval_allow_functions``), allowed beside the dialect's list; compared case-insensitively, bare
    (``my_udf``) or qualified (``analytics.my_udf``).
    """
    _check_text(sql)
    if sql.lstrip().startswith(("```", "~~~")):  # model output pasted as is: no engine reads a fence
        raise QueryError("syntax", f"does not parse as {dialect} SQL: the query is wrapped in a Markdown code fence "
                                   "(```); write the SQL alone")
    tokens, statements = _parse(sql, dialect)
    _check_white_space(sql, tokens, dialect)
    _check_unread_tokens(sql, tokens, dialect)
    if len(statements) != 1:
        raise QueryError(
            "rejected",
            f"{len(statements)} statements; only a single query runs" if statements
            else "no statement: the prediction holds only comments, white space or ';'",
        )
    if _empty_statement_after(tokens):
        # `q; ;` is two statements to SQLite (Python's sqlite3 refuses it), one to PostgreSQL and DuckDB: refused on
        # every engine alike (a comment after the final ';' is no statement)
        raise QueryError("rejected", "an empty statement (`;`) follows the query; only a single query runs: end it "
                                     "with one `;` or none")
    tree = statements[0]
    if not isinstance(tree, _QUERY_ROOTS):
        value = _bare_value(tokens, tree, dialect)
        if value is not None:
            raise QueryError("syntax", value)
        name = _statement_name(tokens, tree)
        raise QueryError("rejected", f"{_article(name)} {name} statement is not a query; only a single read-only query runs")
    nodes = _check_tree(tree)
    _check_identifiers(sql, tokens, dialect)
    key = dialect_key(dialect)
    _check_calls(tokens, nodes, key, frozenset(str(name).strip().lower() for name in allow_functions))
    _check_relations(nodes, key)
    return CheckedQuery(sql=sql, tree=tree)


def dialect_key(dialect: str) -> str:
    """The allowlist a sqlglot dialect uses: ``postgres`` also for ``"postgres, key=value"``."""
    name = type(sqlglot.Dialect.get_or_raise(dialect)).__name__.lower()
    return name if allowlist.has_own_list(name) else str(dialect).split(",", 1)[0].strip().lower()


def _check_text(sql: str) -> None:
    if len(sql) > MAX_SQL_LENGTH:
        raise QueryError("rejected", f"the prediction is {len(sql)} characters long (limit {MAX_SQL_LENGTH})")
    problem = invalid_text(sql)
    if problem is not None:
        raise QueryError("syntax", problem)


def _parse(sql: str, dialect: str) -> tuple[list[Token], list[exp.Expression]]:
    """sqlglot's tokens (kept: calls are found on them) and statements."""
    reader = sqlglot.Dialect.get_or_raise(dialect)
    try:
        try:
            tokens = reader.tokenize(sql)
        except TokenError:
            # SQLite reads an unterminated /* comment to the end of the text (``SELECT 1 /* cut off`` runs there):
            # read with the comment closed; the tokens are the same, and the text that runs is unchanged
            closed = closed_comment(sql, dialect)
            if closed is None:
                raise
            tokens = reader.tokenize(closed)
        tokens = join_keywords_split_by_comments(tokens, reader)
        statements = reader.parser().parse(tokens, sql)
    except RecursionError:
        raise _nested_too_deeply() from None
    except SqlglotError as exc:
        keyword = _leading_keyword(sql, dialect)
        if keyword is not None:
            raise QueryError("rejected", f"{_article(keyword)} {keyword} statement is not a query; only a single read-only "
                                         "query runs") from None
        raise QueryError("syntax", f"does not parse as {dialect} SQL: {_first_line(exc)}") from None
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        # sqlglot's function builders assume well-formed arguments (MAP(x) raises IndexError): not a query
        # the guard can read, so never one that runs.
        raise QueryError("syntax", f"does not parse as {dialect} SQL ({type(exc).__name__} in sqlglot)") from None
    # A comment after the last ';' (`SELECT ...; /* end */`, `SELECT ...; -- done`) is no statement: sqlglot
    # keeps it as a bare Semicolon node carrying the comment.
    return tokens, [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]


def _empty_statement_after(tokens: list[Token]) -> bool:
    """Is there a ``;`` after the ``;`` that ends the first statement (``SELECT 1;;``, ``SELECT 1; -- c`` then ``;``)?
    Empty statements before the first one (``;SELECT 1``) are the engine's to read (SQLite skips them)."""
    kinds = [token.token_type for token in tokens]
    start = next((i for i, kind in enumerate(kinds) if kind != TokenType.SEMICOLON), len(kinds))
    ends = [i for i in range(start, len(kinds)) if kinds[i] == TokenType.SEMICOLON]
    return len(ends) > 1


_QUERY_START_TOKENS = {"SELECT", "WITH", "VALUES", "L_PAREN", "FROM", "TABLE"}

#: Statement words some dialect has but sqlglot does not parse; a statement starting with one is not a query.
_STATEMENT_WORDS = frozenset({
    "EXPORT", "IMPORT", "VACUUM", "REINDEX", "CHECKPOINT", "CALL", "LOAD", "INSTALL", "ATTACH", "DETACH", "COPY",
    "PRAGMA", "SET", "RESET", "DO", "EXECUTE", "EXEC", "PREPARE", "DEALLOCATE", "LISTEN", "NOTIFY", "UNLISTEN",
    "LOCK", "REFRESH", "CLUSTER", "DISCARD", "GRANT", "REVOKE", "SHOW", "DESCRIBE", "EXPLAIN", "ANALYZE", "BEGIN",
    "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "USE", "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE",
    "CREATE", "DROP", "ALTER", "TRUNCATE", "RENAME", "COMMENT", "SECURITY", "FORCE", "UNINSTALL",
    "START", "ABORT", "END", "CLOSE", "FETCH", "MOVE", "DECLARE", "REASSIGN", "SUMMARIZE",
})  # not PIVOT/UNPIVOT: DuckDB's are queries (one sqlglot cannot read is a syntax miss, as any query's)


def starts_with_unknown_word(sql: str, dialect: str) -> bool:
    """Whether ``sql`` starts with a word that is neither a keyword sqlglot knows nor a statement's name (``SELEC``,
    ``FOO``): the guard's refusal of such a text may be a typo, which only the engine's own parser can tell."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, RecursionError, ValueError):
        return False
    return bool(tokens) and tokens[0].token_type == TokenType.VAR and tokens[0].text.upper() not in _STATEMENT_WORDS


def _article(word: str) -> str:
    """``an`` before a statement name read with a vowel sound (``an ATTACH``, ``an UPDATE``), else ``a``."""
    return "an" if word[:1].upper() in "AEIOU" else "a"


#: First tokens of a value, never of a statement: a string, a number, a quoted name, NULL, TRUE, `*`, `(`, a sign.
_VALUE_START_TOKENS = frozenset(getattr(TokenType, name) for name in (
    "STRING", "NUMBER", "IDENTIFIER", "NULL", "TRUE", "FALSE", "STAR", "L_PAREN", "DASH", "PLUS", "PARAMETER",
    "PLACEHOLDER", "NATIONAL_STRING", "BIT_STRING", "HEX_STRING", "BYTE_STRING", "RAW_STRING", "HEREDOC_STRING",
    "UNICODE_STRING") if hasattr(TokenType, name))


def _bare_value(tokens: list[Token], tree: exp.Expression, dialect: str) -> str | None:
    """Why a text sqlglot reads as a bare value (`42`, `'text'`, `*`, a quoted name) is no statement: a syntax error
    on every engine, not a statement the guard refuses (`a LITERAL statement`). None for anything else."""
    if (not tokens or tokens[0].token_type not in _VALUE_START_TOKENS
            or not isinstance(tree, (exp.Condition, exp.Star))
            or any(isinstance(node, FORBIDDEN_NODES) for node in tree.walk())):
        return None
    return f"does not parse as {dialect} SQL: the text is a value ({_first_line(tree.sql(dialect=dialect))[:60]}), not a query"


def _statement_name(tokens: list[Token], tree: exp.Expression) -> str:
    """What a statement that is not a query is, for the reason: its first word as written (``LISTEN``,
    ``CHECKPOINT``: sqlglot reads some such words as an alias or a column), else its tree's node (the DELETE
    of ``WITH ... DELETE``)."""
    if tokens and tokens[0].token_type.name not in _QUERY_START_TOKENS and tokens[0].text.isidentifier():
        return tokens[0].text.upper()
    return _describe(tree)


def _leading_keyword(sql: str, dialect: str) -> str | None:
    """The first keyword of SQL that does not parse, when it cannot start a query (e.g. EXPORT)."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, RecursionError, ValueError):
        return None
    if not tokens or tokens[0].token_type.name in _QUERY_START_TOKENS:
        return None
    word = tokens[0].text.upper()
    return word if word in _STATEMENT_WORDS else None


def _check_tree(tree: exp.Expression) -> list[exp.Expression]:
    """Statements, clauses and file references anywhere in the tree; returns the tree's nodes."""
    try:
        nodes = list(tree.walk())
    except RecursionError:
        raise _nested_too_deeply() from None
    for node in nodes:
        if isinstance(node, FORBIDDEN_NODES):
            raise QueryError("rejected", f"contains {_describe(node)}, which is not allowed in a read-only query")
        if isinstance(node, exp.Table) and _is_file_reference(node):
            raise QueryError("rejected", f"reads the file {node.name!r}; predictions may only read tables")
        if _summarizes_a_string(node):
            raise QueryError("rejected", f"reads the file {node.this.name!r} (DuckDB's SUMMARIZE reads a quoted string "
                                         "as a file); predictions may only read tables")
    return nodes


def _summarizes_a_string(node: exp.Expression) -> bool:
    """``SUMMARIZE 'path'`` (a subquery in DuckDB): the string is a file DuckDB scans, never a table of the tree."""
    summarize = getattr(exp, "Summarize", None)
    return summarize is not None and isinstance(node, summarize) and isinstance(node.this, exp.Literal) \
        and node.this.is_string


# --------------------------------------------------------------------------- white space
#: White space as the engines read it (PostgreSQL's `space`, SQLite's, MySQL's): ASCII only.
_ENGINE_WHITE_SPACE = frozenset(" \t\n\r\f\v")

#: Dialects of PostgreSQL's parser. It reads a non-ASCII white space character as a letter of a name while sqlglot
#: ends the name there, and has dollar-quoted strings that then hide code from the guard (DuckDB turns most Unicode
#: spaces into spaces before it parses, but not all: :data:`_DUCKDB_WHITE_SPACE`; SQLite reads them as letters too,
#: but has no quoting they could open); and it reads ``(expression).name`` as the call ``name(expression)`` when the value has no field of
#: that name (functional notation): ``('/etc/passwd'::text).pg_read_file`` reads the file.
_POSTGRES_PARSER_DIALECTS = frozenset({"postgres", "redshift", "materialize", "risingwave"})

#: DuckDB replaces these Unicode spaces with a space before it parses, as sqlglot reads them; the other characters
#: Python calls white space (U+0085, U+1680, U+2028, U+2029, U+001C-U+001F) it reads as letters of a name, so
#: ``SELECT 1 AS <U+2028>$$, f() AS <U+2028>$$`` is a dollar-quoted string to sqlglot and two names around a call to
#: DuckDB.
_DUCKDB_WHITE_SPACE = _ENGINE_WHITE_SPACE | frozenset("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                                                      "\u2008\u2009\u200a\u202f\u205f\u3000")

#: Characters DuckDB also turns into spaces before it parses that are no white space to Python, so sqlglot reads them
#: as letters of a name (found by parsing every BMP character with DuckDB): ``FROM pg_settings<U+200B>`` named a table
#: ``pg_settings<U+200B>`` to the guard, which refuses ``pg_settings``, and read ``pg_settings`` on DuckDB.
_DUCKDB_INVISIBLE_SPACE = frozenset("\u200b\u2060\ufeff")  # zero width space, word joiner, zero width no-break space


def _engine_white_space(dialect: str) -> frozenset[str] | None:
    """The characters the dialect's engine reads as white space, when it reads fewer than sqlglot does and has
    quoting they could open; None: nothing to compare."""
    key = dialect_key(dialect)
    if key in _POSTGRES_PARSER_DIALECTS:
        return _ENGINE_WHITE_SPACE
    return _DUCKDB_WHITE_SPACE if key == "duckdb" else None


def _check_white_space(sql: str, tokens: list[Token], dialect: str) -> None:
    """Refuse white space that only sqlglot reads as white space: the whole class, not a spelling.

    sqlglot ends a token at any character Python's ``str.isspace()`` accepts; PostgreSQL reads a non-ASCII one
    (U+00A0, U+2003, U+3000, ...) as a letter of a name and an ASCII separator (U+001C-U+001F) as an error. The
    two then read different tokens: ``interval<U+00A0>$x$, pg_read_file(...) AS b$x$`` is a dollar-quoted
    string to sqlglot, and to PostgreSQL two names around a call. Such a character outside every token (a
    string, a quoted name) and every comment is refused.
    """
    if sql.isascii() and not any(ch in sql for ch in "\x1c\x1d\x1e\x1f"):
        return
    white = _engine_white_space(dialect)
    if white is None:
        return
    invisible = _DUCKDB_INVISIBLE_SPACE if dialect_key(dialect) == "duckdb" else frozenset()
    odd = [i for i, ch in enumerate(sql) if (ch.isspace() and ch not in white) or ch in invisible]
    if not odd:
        return
    tokenizer = sqlglot.Dialect.get_or_raise(dialect).tokenizer_class
    starts = [token.start for token in tokens]
    comments: dict[int, list[tuple[int, int]]] = {}  # the comments of each stretch between two tokens, read once
    for position in odd:
        k = bisect_right(starts, position) - 1
        if k >= 0 and position <= tokens[k].end and (sql[position].isspace() or tokens[k].token_type in _TEXT_TOKENS):
            continue  # inside a string or a quoted name: text (an invisible space inside a bare name is the engine's)
        gap = tokens[k].end + 1 if k >= 0 else 0
        if gap not in comments:
            comments[gap] = _comment_spans(sql, gap, starts[k + 1] if k + 1 < len(tokens) else len(sql), tokenizer)
        spans = comments[gap]
        n = bisect_right(spans, (position, len(sql))) - 1
        if n >= 0 and position < spans[n][1]:
            continue
        if not sql[position].isspace():
            raise QueryError(
                "rejected",
                f"has the invisible character U+{ord(sql[position]):04X} at offset {position}, outside any string or "
                f"quoted name; {dialect} reads it as white space, where the guard reads it as part of a name, so the "
                "guard cannot check the query as the database reads it: remove it, or write plain spaces",
            )
        raise QueryError(
            "rejected",
            f"has the white space character U+{ord(sql[position]):04X} at offset {position}, outside any string or "
            "comment; the database reads it as part of a name (or as an error), not as white space, so the guard "
            "cannot check the query as the database reads it: write plain spaces",
        )


#: Tokens whose text is a value or a quoted name, where any character is text.
_TEXT_TOKENS = frozenset(getattr(TokenType, name) for name in (
    "STRING", "IDENTIFIER", "NATIONAL_STRING", "BIT_STRING", "HEX_STRING", "BYTE_STRING", "RAW_STRING",
    "HEREDOC_STRING", "UNICODE_STRING") if hasattr(TokenType, name))


def _comment_spans(sql: str, start: int, stop: int, tokenizer) -> list[tuple[int, int]]:
    """The comments (``[begin, end)``) in the white space between two tokens, ``sql[start:stop]``, read with the
    dialect's comment markers as sqlglot read that stretch."""
    comments = tokenizer._COMMENTS
    markers = sorted(comments, key=len, reverse=True)
    line_ends = "\n" if tokenizer.COMMENTS_TERMINATE_AT_NEWLINE_ONLY else "\n\r"
    spans, i = [], start
    while i < stop:
        marker = next((m for m in markers if sql.startswith(m, i)), None)
        if marker is None:
            i += 1
            continue
        end, j, depth = comments[marker], i + len(marker), 1
        while j < stop and depth:
            if end is None:
                if sql[j] in line_ends:
                    break
                j += 1
            elif tokenizer.NESTED_COMMENTS and sql.startswith(marker, j):
                depth, j = depth + 1, j + len(marker)
            elif sql.startswith(end, j):
                depth, j = depth - 1, j + len(end)
            else:
                j += 1
        spans.append((i, j))
        i = j
    return spans


# --------------------------------------------------------------------------- tokens the guard cannot read
#: Keyword tokens that open a statement the engine runs *inside* a query, per dialect. DuckDB reads
#: ``(SHOW name)`` anywhere a subquery may stand (``SELECT (SHOW memory_limit)``, ``FROM (SHOW secret_directory)``):
#: SHOW of a setting reads it, as the refused ``current_setting`` does, and sqlglot reads ``(SHOW x)`` as a table or
#: a column named SHOW; so does ``SELECT 1 UNION SHOW memory_limit``. SHOW is reserved in DuckDB: a name unquoted
#: only after ``AS`` or a dot (``SELECT 1 AS show``, ``t.show``), everywhere else the statement.
_NESTED_STATEMENT_TOKENS: dict[str, frozenset] = {"duckdb": frozenset({TokenType.SHOW})}


def _check_unread_tokens(sql: str, tokens: list[Token], dialect: str) -> None:
    """Refuse text sqlglot tokenized without reading it as the engine does: a character it does not know
    (``UNKNOWN``: DuckDB quotes names with backticks, which sqlglot's DuckDB and PostgreSQL dialects do not know, so
    in ``SELECT 1 `--`, f() `--``` the guard read ``--`` as the start of a comment hiding ``f()`` while DuckDB runs
    it), or a statement the engine runs inside the query (:data:`_NESTED_STATEMENT_TOKENS`)."""
    nested = _NESTED_STATEMENT_TOKENS.get(dialect_key(dialect), frozenset())
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.UNKNOWN:
            raise QueryError(
                "rejected",
                f"has the character {token.text!r} at offset {token.start}, which the guard cannot read as {dialect} "
                "does (what follows it may be read differently); quote names with double quotes",
            )
        if token.token_type in nested and not (i > 0 and tokens[i - 1].token_type in (TokenType.ALIAS, TokenType.DOT)):
            raise QueryError(
                "rejected",
                f"contains a {token.text.upper()} statement (at offset {token.start}), which {dialect} runs inside the "
                "query and which reads settings; only a single read-only query runs",
            )


# --------------------------------------------------------------------------- identifiers
def _check_identifiers(sql: str, tokens: list[Token], dialect: str) -> None:
    """Refuse names the engine would read differently from sqlglot: the whole class, not a spelling.

    PostgreSQL reads ``U&"pg\\005fread\\005ffile"`` (no space around ``&``) as one identifier with
    Unicode escapes, ``pg_read_file``; sqlglot reads ``U & "pg\\005f..."``. Any quoted identifier
    whose text is not simply its name between the dialect's quotes is refused the same way.
    """
    quotes = sqlglot.Dialect.get_or_raise(dialect).tokenizer_class._IDENTIFIERS
    for i, token in enumerate(tokens):
        if (token.token_type == TokenType.VAR and token.text in ("U", "u") and i + 2 < len(tokens)
                and tokens[i + 1].token_type == TokenType.AMP and tokens[i + 2].token_type == TokenType.IDENTIFIER
                and tokens[i + 1].start == token.end + 1 and tokens[i + 2].start == tokens[i + 1].end + 1):
            raw = sql[token.start:tokens[i + 2].end + 1]
            raise QueryError(
                "rejected",
                f"uses the Unicode-escaped identifier {raw}; write names plainly "
                "(the guard checks names as written, and escapes could name any function or table)",
            )
        if token.token_type == TokenType.IDENTIFIER:
            raw = sql[token.start:token.end + 1]
            opening = next((q for q in quotes if raw.startswith(q)), None)
            closing = quotes.get(opening) if opening is not None else None
            if closing is None or len(raw) < len(opening) + len(closing) or not raw.endswith(closing):
                continue  # not a quoted name in this text (a name sqlglot synthesised): nothing to compare
            inner = raw[len(opening):len(raw) - len(closing)]
            if inner.replace(closing * 2, closing) != token.text:
                raise QueryError(
                    "rejected",
                    f"uses the identifier {raw}, whose name is escaped; write names plainly "
                    "(the guard checks names as written)",
                )


# --------------------------------------------------------------------------- calls
#: Token types that may name a function when followed by ``(`` (besides plain and quoted names):
#: keywords sqlglot also accepts as function names (LEFT, REPLACE, FORMAT, GLOB, UNNEST, ...).
_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER})

#: Keywords followed by ``(`` that open syntax, not a call.
_SYNTAX_TOKENS = frozenset(getattr(TokenType, name) for name in (
    "ALL", "ANY", "SOME", "EXISTS", "FILTER", "TABLE", "WINDOW", "INSERT", "MERGE", "OFFSET", "PRIMARY_KEY",
    "INDEX", "DECLARE", "COMMAND", "COLLATE", "NEXT", "ROW", "IN", "VALUES", "OVER",
) if hasattr(TokenType, name))


@lru_cache(maxsize=None)
def _call_tokens(dialect: str) -> frozenset:
    parser = sqlglot.Dialect.get_or_raise(dialect).parser_class
    return frozenset(parser.FUNC_TOKENS - parser.TYPE_TOKENS - _SYNTAX_TOKENS) | _NAME_TOKENS


def _check_calls(tokens: list[Token], nodes: list[exp.Expression], dialect: str, allow: frozenset[str]) -> None:
    """Every function the text calls must be on the dialect's allowlist or the user's ``allow_functions``."""
    allowed = allowlist.allowed_functions(dialect)
    call_tokens = _call_tokens(dialect)
    at: dict[int, list[exp.Expression]] = {}
    for node in nodes:
        if isinstance(node, (exp.Func, exp.Identifier)):
            meta = getattr(node, "_meta", None)
            if meta and meta.get("start") is not None:
                at.setdefault(meta["start"], []).append(node)
    operators = _operator_tokens(tokens, nodes)
    for i, token in enumerate(tokens[:-1]):
        if tokens[i + 1].token_type != TokenType.L_PAREN or i in operators:
            continue
        here = at.get(token.start, ())
        if not any(isinstance(n, exp.Func) for n in here):
            # Not a call in sqlglot's tree. A call all the same, unless the tree says what else it is:
            # a name in an alias or CTE column list, a type's modifiers after :: or AS, clause syntax.
            if token.token_type not in call_tokens:
                continue
            if any(isinstance(n, exp.Identifier) and isinstance(n.parent, exp.TableAlias) for n in here):
                continue  # `AS t(a, b)`, `WITH c(a, b) AS (...)`
            if i > 0 and tokens[i - 1].token_type in (TokenType.DCOLON, TokenType.ALIAS):
                continue
            if token.token_type != TokenType.IDENTIFIER and token.text.lower() in allowlist.SYNTAX_WORDS:
                continue
        _check_call(tokens, i, dialect, allowed, allow)
    if dialect in _POSTGRES_PARSER_DIALECTS:
        for i in range(2, len(tokens)):
            if (tokens[i - 1].token_type == TokenType.DOT and tokens[i].token_type != TokenType.STAR
                    and tokens[i - 2].token_type in (TokenType.R_PAREN, TokenType.R_BRACKET)
                    and not _field_of_a_row_type(at.get(tokens[i].start, ()))):
                _check_call(tokens, i, dialect, allowed, allow, notation=True)


#: Operators written with a keyword (or a symbol sqlglot tokenizes as one) that sqlglot also accepts as a function's
#: name: with a parenthesised right operand (``name LIKE ('A%')``, ``name ~ ('^A')``, ``ts AT TIME ZONE ('UTC')``) the
#: keyword is followed by ``(`` as a call is. Per operator node: how its operator token is told.
_OPERATOR_NODES: tuple[tuple[type[exp.Expression], Callable[[Token], bool]], ...] = tuple(
    (getattr(exp, name), test) for name, test in (
        ("Like", lambda t: t.token_type == TokenType.LIKE),
        ("ILike", lambda t: t.token_type == TokenType.ILIKE),
        ("RegexpLike", lambda t: t.token_type == TokenType.RLIKE),
        ("Glob", lambda t: t.token_type == TokenType.GLOB),
        ("AtTimeZone", lambda t: t.token_type == TokenType.VAR and t.text.upper() == "ZONE"),
    ) if hasattr(exp, name))


def _operator_tokens(tokens: list[Token], nodes: list[exp.Expression]) -> set[int]:
    """The indexes of the tokens that are the operator of an operator node of the tree (:data:`_OPERATOR_NODES`): for
    each such node, the first token of its operator's kind after the last token of its left operand (as the tree
    places it). A name is never skipped unless sqlglot read an operator of that kind right there."""
    found: set[int] = set()
    if not any(isinstance(node, tuple(kind for kind, _ in _OPERATOR_NODES)) for node in nodes):
        return found
    starts = [token.start for token in tokens]
    for node in nodes:
        test = next((test for kind, test in _OPERATOR_NODES if isinstance(node, kind)), None)
        left = node.this if test is not None else None
        if not isinstance(left, exp.Expression):
            continue
        ends = [meta["end"] for part in left.walk() if (meta := getattr(part, "_meta", None)) and meta.get("end") is not None]
        if not ends:
            continue
        k = bisect_right(starts, max(ends))
        while k < len(tokens) - 1 and not test(tokens[k]):
            k += 1
        if test(tokens[k]) if k < len(tokens) else False:
            found.add(k)
    return found


def _field_of_a_row_type(here: Iterable[exp.Expression]) -> bool:
    """Is the name a field of a value cast to a type of the database's own (``(NULL::tickets).id``)? Such a type is a
    table's row type, whose field the name is (a call would need a function of that row type: only pure built-ins
    take one); a built-in type (:data:`~.allowed_functions.POSTGRES_BUILTIN_TYPES`) has no fields."""
    for node in here:
        dot = node.parent
        if not (isinstance(node, exp.Identifier) and isinstance(dot, exp.Dot) and dot.expression is node):
            continue
        value = dot.this
        while isinstance(value, exp.Paren):
            value = value.this
        to = value.args.get("to") if isinstance(value, exp.Cast) else None
        if not (isinstance(to, exp.DataType) and to.this == exp.DataType.Type.USERDEFINED):
            return False
        parts = [part.strip('"').lower() for part in str(to.args.get("kind") or "").split(".")]
        if len(parts) > 1:
            return parts[0] not in ("pg_catalog", "information_schema")
        return bool(parts[0]) and not parts[0].startswith("_") and parts[0] not in allowlist.POSTGRES_BUILTIN_TYPES
    return False


def _check_call(tokens: list[Token], i: int, dialect: str, allowed: frozenset[str], allow: frozenset[str], *,
                notation: bool = False) -> None:
    """``notation``: the name follows ``(...).``, which the engine may read as a call (functional notation)."""
    token = tokens[i]
    name = _resolve(token, dialect)
    qualifier = None
    if i >= 2 and tokens[i - 1].token_type == TokenType.DOT and tokens[i - 2].token_type in _NAME_TOKENS:
        qualifier = _resolve(tokens[i - 2], dialect)
    shown = f"{qualifier}.{name}" if qualifier else name
    if name.lower() in allow or shown.lower() in allow:
        return
    system = allowlist.SYSTEM_SCHEMAS.get(dialect, frozenset())
    builtin = qualifier is None or system is None or qualifier in system
    if builtin and name in allowed:
        return
    where = "" if builtin else f" (a function outside {', '.join(sorted(system)) or 'the built-in functions'})"
    if notation:
        where = f" (written `(...).{token.text}`: {dialect} reads a name after `(...).` as a call on the value)"
    raise QueryError(
        "rejected",
        f"calls {shown}(){where}, which is not on the {dialect} allowlist of pure functions; if it is your own "
        f"function, allow it with `allow_functions: [{shown}]` in the suite or the ini option sqleval_allow_functions",
        function=shown,
    )


def _resolve(token: Token, dialect: str) -> str:
    """The name the engine looks up: case-insensitive on SQLite and DuckDB; elsewhere unquoted names fold
    to lower case (as PostgreSQL does) and quoted ones are exact."""
    if token.token_type == TokenType.IDENTIFIER and dialect not in ("sqlite", "duckdb"):
        return token.text
    return token.text.lower()


# --------------------------------------------------------------------------- relations
def _check_relations(nodes: list[exp.Expression], dialect: str) -> None:
    """System catalogue relations that expose secrets or server state (``pg_authid``, ``pg_settings``...), and
    PostgreSQL's TOAST tables (schema ``pg_toast``, ``pg_toast_temp_N``): the raw storage of large values of every
    table, so ``pg_toast.pg_toast_1260`` reads pg_authid's."""
    _check_table_functions(nodes, dialect)
    exact, prefixes = allowlist.denied_relations(dialect)
    information_schema = allowlist.denied_information_schema(dialect)
    if not (exact or prefixes or information_schema):
        return
    system = allowlist.SYSTEM_SCHEMAS.get(dialect) or frozenset()
    # A CTE of the same name is no excuse: inside its own (non-recursive) body the name is the catalogue.
    for node in nodes:
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            continue
        name = _fold_identifier(node.this, dialect)
        schema = _fold_identifier(node.args.get("db"), dialect)
        if schema is not None and (schema == "pg_toast" or schema.startswith("pg_toast_temp_")) \
                and dialect in _POSTGRES_PARSER_DIALECTS:
            raise QueryError(
                "rejected",
                f"reads {schema}.{name}, the raw storage of other tables' large values (system catalogues with "
                "secrets included); predictions may only read the database's own tables",
            )
        if schema == "information_schema":
            denied = name in information_schema
        else:
            # a dialect whose functions live in no schema (SYSTEM_SCHEMAS None: SQLite, DuckDB) finds its catalogue
            # relations under any qualifier (SQLite's `main.sqlite_stmt`, DuckDB's `system.main.duckdb_settings`)
            on_path = schema is None or schema in system or allowlist.SYSTEM_SCHEMAS.get(dialect, ()) is None
            denied = on_path and (name in exact or name.startswith(prefixes))
        if denied:
            raise QueryError(
                "rejected",
                f"reads {name}, a system catalogue that exposes secrets or server state; "
                "predictions may only read the database's own tables",
            )


def _check_table_functions(nodes: list[exp.Expression], dialect: str) -> None:
    """Allowed functions called as a table that read a relation by its name (DuckDB's ``histogram`` table macro):
    the relation named in a string is never a table of the tree, so no other check sees it."""
    denied = allowlist.denied_table_functions(dialect)
    if not denied:
        return
    for node in nodes:
        if isinstance(node, (exp.Table, exp.Lateral)) and isinstance(node.this, exp.Func):
            name = str(node.this.name if isinstance(node.this, exp.Anonymous) else node.this.sql_name()).lower()
            if name in denied:
                raise QueryError(
                    "rejected",
                    f"calls {name}() as a table: in FROM, {dialect}'s {name}(source, ...) reads the relation its first "
                    "argument names (system catalogues included), which the guard cannot check; predictions may "
                    f"only read the database's own tables by name ({name}() as an aggregate is allowed)",
                )


def _fold_identifier(identifier, dialect: str) -> str | None:
    if not isinstance(identifier, exp.Identifier):
        return None
    if identifier.quoted and dialect not in ("sqlite", "duckdb"):
        return identifier.name
    return identifier.name.lower()


def function_name(node: exp.Func) -> str:
    """A function node's name as sqlglot knows it (for messages)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _is_file_reference(table: exp.Table) -> bool:
    identifier = table.this
    if not isinstance(identifier, exp.Identifier) or not identifier.quoted:
        return False
    name = identifier.name.lower()
    return any(mark in name for mark in ("/", "\\", "://", "*", "?")) or name.endswith(_FILE_SUFFIXES)


def _describe(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.Into):
        return "SELECT ... INTO"
    if isinstance(node, exp.Lock):
        return "a row-locking clause (FOR UPDATE/SHARE)"
    if type(node).__name__ == "NextValueFor":
        return "NEXT VALUE FOR (it advances a sequence)"
    return type(node).__name__.upper()


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
