"""SQL extraction: the named step between a model's answer and the SQL that is scored.

Modes (suite key ``extract:``):

- ``auto`` (default): the last fenced code block (```` ```sql ... ``` ````; the last query among several blocks of SQL,
  not a ``CREATE INDEX`` suggested after it; an unclosed final fence counts; the
  query before a fence the answer closes but never opened, the prompt having opened it: see ``_prefilled_block``;
  when no block holds SQL, the text outside the blocks); else the last query in XML-style tags (``<sql>...</sql>``,
  step ``tagged``); else the SQL section of an answer in labelled sections (LangChain's ``SQLQuery: ...``/``SQLResult: ...``/
  ``Answer: ...``: see ``_labelled_section``); else a leading label (``SQL:``, ``Query:``, ``Answer:``) removed; else leading prose lines removed up to the
  first line that starts a SQL statement (and trailing prose after a blank line dropped); else the text.
  A leading ``<think>...</think>`` block (a reasoning model's drafts) is skipped in ``auto`` and ``fenced``.
  An answer that would have no SQL is read once more (steps ``json`` and ``inline``): a JSON object's ``sql``
  string, else the last inline code span that sqlglot parses as one query.
- ``fenced``: the last fenced block, and a miss when there is none.
- ``raw``: the text as it came.

Whatever the mode, the result must start like SQL (its first token, read by sqlglot's tokenizer, is a statement
keyword or an opening parenthesis). Otherwise the case misses with kind ``no_sql`` and the message
``the model's answer contains no SQL: <first 80 characters>``, on every engine alike (without this step a
fenced answer is ``rejected`` on SQLite, whose tokenizer reads ```` ``` ```` as an identifier, and ``syntax`` on
DuckDB and PostgreSQL). The regular expressions here read the model's prose and Markdown, never SQL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

EXTRACT_MODES = ("auto", "fenced", "raw")
SQL_FENCE_TAGS = {"", "sql", "sqlite", "sqlite3", "postgres", "postgresql", "psql", "pgsql", "duckdb", "mysql",
                  "tsql", "plsql", "bigquery", "snowflake", "trino", "ansi"}
#: Statement words sqlglot's generic tokenizer reads as plain names; they start SQL all the same (the guard rejects them).
STATEMENT_WORDS = {"ATTACH", "DETACH", "INSTALL", "VACUUM", "CALL", "SUMMARIZE", "EXPORT", "IMPORT", "CHECKPOINT",
                   "REINDEX", "LISTEN", "NOTIFY", "UNLISTEN", "COPY", "EXEC", "EXECUTE", "DECLARE", "LOCK", "RESET",
                   "DISCARD", "PREPARE", "DEALLOCATE", "FETCH", "CLUSTER", "REFRESH"}
#: Tokens that cannot start a SQL statement.
_NOT_A_START = {"VAR", "IDENTIFIER", "UNKNOWN", "STRING", "NUMBER", "NATIONAL_STRING", "HEX_STRING", "BIT_STRING",
                "BYTE_STRING", "RAW_STRING", "HEREDOC_STRING", "COLON", "COMMA", "DOT", "SEMICOLON", "STAR", "R_PAREN",
                "PARAMETER", "PLACEHOLDER", "DASH", "PLUS", "SLASH", "LT", "GT", "EQ", "HASH", "AMP", "PIPE", "CARET",
                "TILDA", "BACKSLASH", "L_BRACKET", "R_BRACKET", "L_BRACE", "R_BRACE", "NOT", "AND", "OR", "AS", "IS",
                "IN", "ON", "BY", "TO", "IF", "ALL", "ANY", "SOME", "NULL", "TRUE", "FALSE", "CASE", "END", "THEN", "ELSE",
                "WHEN", "FOR", "OF", "WITHIN_GROUP", "INTO", "AT_TIME_ZONE", "LIKE", "BETWEEN", "ASC", "DESC"}

#: A line opening a fenced block (CommonMark: three or more backticks or tildes starting the line, then an info
#: string, which for backticks holds no backtick). Any indent counts, not CommonMark's 3 spaces alone: a fence in a
#: numbered list item is indented 4 or more. A ``` inside a line (prose, a SQL literal or comment) opens nothing,
#: except a bare or SQL-tagged fence ending a prose line after a space or colon (``Here: ```sql``), as chat models
#: write it.
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^\n]*")
_FENCE_OPEN_AFTER_PROSE = re.compile(r"[ \t:](`{3,}|~{3,})[ \t]*(" + "|".join(
    sorted((re.escape(t) for t in SQL_FENCE_TAGS if t), key=len, reverse=True)) + r")?[ \t\r]*$", re.IGNORECASE)


@dataclass(frozen=True)
class _Block:
    tag: str  # the info string's first word, as written
    body: str
    start: int  # of the opening fence
    end: int  # after the closing fence's line (or the text's end: an unclosed final block)


def _fenced_blocks(text: str) -> list[_Block]:
    """The fenced code blocks of ``text``, read line by line as CommonMark does: a block opens on a fence line and
    closes on a line holding only a run of the same character at least as long (so a longer fence holds a shorter
    one, as a query whose string literal holds ```); else at the end of a line that ends with such a run after
    text (``SELECT ...;```); else, unclosed, it runs to the end."""
    blocks: list[_Block] = []
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    number = 0
    while number < len(lines):
        line = lines[number]
        opened = _FENCE_OPEN.fullmatch(line)
        if opened is not None and opened.group(1)[0] == "`" and "`" in line[opened.end(1):]:
            opened = None  # a backtick fence's info string holds no backtick: ```sql SELECT 1``` is a code span
        if opened is None:
            opened = _FENCE_OPEN_AFTER_PROSE.search(line)
            if opened is not None and not line[:opened.start()].strip():
                opened = None
        if opened is None:
            number += 1
            continue
        fence = opened.group(1)
        closing = re.compile(r"[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t\r]*")  # \r: a CRLF answer
        close = next((n for n in range(number + 1, len(lines)) if closing.fullmatch(lines[n])), None)
        body_end = len(lines) if close is None else close
        body = "\n".join(lines[number + 1:body_end])
        end = len(text) if close is None else min(offsets[close + 1] - 1, len(text))
        if close is None:  # `SELECT ...;```: a model closing its fence at the end of the query's last line
            ending = re.compile(r"(?<=\S)(?<!" + re.escape(fence[0]) + ")" + re.escape(fence[0]) + "{"
                                + str(len(fence)) + r",}[ \t\r]*")
            for n in range(number + 1, len(lines)):
                closed = ending.search(lines[n])
                if closed is not None and closed.end() == len(lines[n]):
                    body = "\n".join(lines[number + 1:n] + [lines[n][:closed.start()]])
                    body_end, end = n, min(offsets[n + 1] - 1, len(text))
                    break
        blocks.append(_Block(opened.group(2) or "", body, offsets[number] + opened.start(1), end))
        number = body_end + 1
    return blocks


def _without_fenced_blocks(text: str, blocks: list[_Block]) -> str:
    """``text`` with each fenced block replaced by an empty line."""
    parts, at = [], 0
    for block in blocks:
        parts += [text[at:block.start], "\n\n"]
        at = block.end
    return "".join(parts + [text[at:]])
#: An inline code span (CommonMark: a run of backticks, then the same run); its content is tried as a query.
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
#: A reasoning model's thinking at the start of its answer (DeepSeek-R1, Qwen3 served by vLLM or Ollama).
_THINK = re.compile(r"\A\s*<(think|thinking|reasoning)>.*?(</\1>|\Z)", re.DOTALL | re.IGNORECASE)
#: the end of thinking whose opening tag was in the prompt (DeepSeek-R1's chat template ends the prompt with `<think>`,
#: so a server without a reasoning parser returns `drafts...\n</think>\n\nanswer`): a closing tag ending its line
_THINK_END = re.compile(r"</(think|thinking|reasoning)>[ \t]*(?:\n|\Z)", re.IGNORECASE)
#: The keys of a JSON answer that hold its SQL (compared in lower case).
JSON_SQL_KEYS = ("sql", "query", "sql_query")
_INTRO_LABEL = re.compile(r"\A[A-Za-z]+:(?!:)")
#: ``SQL:``, ``Final answer:``; also in Markdown bold (``**SQL:**``, ``**SQL**:``, ``__Answer:__``), as chat models write it.
_LABEL = re.compile(r"\A\s*(?:\*\*|__)?(?:sql(?:\s+query)?|query|answer|final\s+answer)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*",
                    re.IGNORECASE)
#: A section label opening a line of the answer (``SQLQuery:``, ``**SQL:**``, ``### Answer:``): what follows it, up to
#: the next such label, is that section (LangChain's SQL chains answer ``SQLQuery: ...``/``SQLResult: ...``/``Answer: ...``).
_SECTION = re.compile(r"^[ \t]*(?:#+[ \t]*)?(?:\*\*|__)?([A-Za-z][A-Za-z _-]{0,24}?)(?:\*\*|__)?[ \t]*:(?!:)"
                      r"(?:[ \t]*(?:\*\*|__))?", re.MULTILINE)
#: Section labels that hold the SQL (compared in lower case, without spaces, ``_`` or ``-``).
SQL_SECTIONS = ("sqlquery", "sql", "query")
#: Section labels that end the SQL's section: what the answer holds besides its SQL.
OTHER_SECTIONS = ("sqlresult", "queryresult", "result", "results", "answer", "finalanswer", "question", "explanation",
                  "output", "observation", "thought", "reasoning", "note")
PREVIEW = 80


@dataclass(frozen=True)
class Extraction:
    """``sql`` is None when nothing SQL-like was found; then ``error_kind``/``message`` say why."""

    sql: str | None
    mode: str
    step: str  # fenced | tagged | label | prose | text | json | inline | none
    error_kind: str | None = None
    message: str | None = None

    def as_json(self) -> dict[str, str]:
        return {"mode": self.mode, "step": self.step}


def preview(text: str, limit: int = PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


#: Invisible characters a model (or a file) can put before or after its answer: a byte-order mark, zero-width
#: spaces and joiners, a word joiner. Never inside the answer: there they may be a literal's.
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"
#: A chat template's end-of-turn tokens that a serving stack left at the end of the answer (vLLM, TGI, llama.cpp with
#: special tokens shown): Llama 3's, ChatML's (Qwen, Mistral instruct), GPT-2's, Llama 2's and SentencePiece's,
#: Gemma's, Phi's.
END_OF_TURN_TOKENS = ("<|eot_id|>", "<|im_end|>", "<|endoftext|>", "</s>", "<end_of_turn>", "<|end|>",
                      "<|end_of_text|>", "<eos>", "<|return|>")
#: gpt-oss's "harmony" format, when the server leaves its channels in the text (``<|channel|>analysis<|message|>...
#: <|end|><|start|>assistant<|channel|>final<|message|>SELECT ...``): the answer is the final channel's message.
_HARMONY_STARTS = ("<|channel|>", "<|start|>")
_HARMONY_FINAL = "<|channel|>final<|message|>"


def _without_wrapping_tokens(text: str) -> str:
    """The answer without invisible characters around it and end-of-turn tokens after it (`SELECT 1;<|eot_id|>`,
    `SELECT 1</s>`): none is SQL, and a query followed by one would read as a syntax error. Inside the answer they
    stay (a string literal may hold `</s>`)."""
    text = text.strip().strip(_INVISIBLE).strip()
    changed = True
    while changed:
        changed = False
        for token in END_OF_TURN_TOKENS:
            if text.endswith(token):
                text, changed = text[: -len(token)].rstrip().rstrip(_INVISIBLE).rstrip(), True
    return text


def extract_sql(text: str | None, mode: str = "auto", dialect: str = "") -> Extraction:
    """The SQL of a model's answer (see the module's text). In ``auto`` and ``fenced`` modes, Unicode spaces between
    its tokens (a no-break space, an ideographic space: see :func:`unicode_spaces_normalised`) become plain ones."""
    found = _extract(text, mode)
    if found.sql is None or mode == "raw":
        return found
    from ..sql.spacing import unicode_spaces_normalised

    sql = unicode_spaces_normalised(found.sql, dialect)
    return found if sql == found.sql else replace(found, sql=sql)


def _extract(text: str | None, mode: str) -> Extraction:
    if mode not in EXTRACT_MODES:
        raise ValueError(f"unknown extract mode {mode!r}: use one of {', '.join(EXTRACT_MODES)}")
    if text is None or not text.strip():
        return Extraction(None, mode, "none", "no_prediction", "the model returned an empty answer")
    if mode == "raw":
        return _checked(text.strip(), text, mode, "text")
    text = _without_wrapping_tokens(text)
    if text.startswith(_HARMONY_STARTS):  # gpt-oss's channels, left in the text by a server that did not parse them
        final = text.rpartition(_HARMONY_FINAL)
        if not final[1]:  # cut off while thinking (analysis only): no answer yet
            return Extraction(None, mode, "none", "no_sql", f"the model's answer contains no SQL: {preview(text)}")
        text = _without_wrapping_tokens(final[2])
    thought = _THINK.match(text)  # a reasoning model's thinking first: its drafts are not the answer
    if thought:
        if not thought.group(2) or not text[thought.end():].strip():  # cut off while thinking, or nothing after
            return Extraction(None, mode, "none", "no_sql", f"the model's answer contains no SQL: {preview(text)}")
        text = text[thought.end():]
    else:
        ended = _THINK_END.search(text)
        if (ended and not re.search(f"<{ended.group(1)}>", text[:ended.start()], re.IGNORECASE)
                and not _parses(text)):  # a query whose string literal holds the tag is a query
            if not text[ended.end():].strip():  # thinking, then no answer
                return Extraction(None, mode, "none", "no_sql", f"the model's answer contains no SQL: {preview(text)}")
            text = text[ended.end():]
    fenced = _prefilled_block(text)
    if fenced is None:
        fenced = last_fenced_block(text)
    if fenced is not None:
        found = _checked(fenced, text, mode, "fenced")
        if found.sql is None and mode == "auto" and not looks_like_sql(fenced):  # no block holds SQL (example
            # output in a fence after a plain query): the other steps read the text outside the blocks
            outside = _outside_fences(text)
            if outside is not None:
                return outside
        return found
    if _fenced_blocks(text):  # ```sql then ``` with nothing between: the model sent an empty block
        empty = Extraction(None, mode, "fenced", "no_prediction",
                           f"the model's answer has an empty code block: {preview(text)}")
        if mode == "fenced":
            return empty
    else:
        empty = None
    if mode == "fenced":
        return Extraction(None, mode, "none", "no_sql", f"no fenced code block in the model's answer: {preview(text)}")
    stripped = text.strip()
    tagged = _tagged_block(stripped)  # "<sql>SELECT ...</sql>", as prompts that ask for XML tags get it
    if tagged is not None:
        return _checked(tagged, text, mode, "tagged")
    sectioned = _labelled_section(stripped)  # LangChain's "SQLQuery: ...\nSQLResult: ...\nAnswer: ..."
    if sectioned is not None:
        return _checked(sectioned, text, mode, "label")
    label = _LABEL.match(stripped)
    if label:
        return _checked(_trailing_prose_removed(stripped[label.end():].strip()), text, mode, "label")
    lines = stripped.split("\n")  # not splitlines(): rejoined, a U+2028 or \r inside a string literal stays as it was
    introduced = _introduces(lines[0])  # "Select the names:", "Update: ...": prose, though its first word is SQL's
    if looks_like_sql(stripped) and not introduced:
        after = _after_prose_colon(stripped, lines[0])  # "Select the rows: SELECT name FROM t": prose whose first
        if after is not None:  # word is SQL's, then the query on the same line
            return _checked(after, text, mode, "label")
        return _checked(_trailing_prose_removed(stripped), text, mode, "text")
    start = 0  # of line `number` in `stripped`: the rest is a slice, not a join of the lines (a model's degenerate
    unsure = 0  # repetition has thousands), made only for a line that may start SQL: linear in the answer
    comments = None  # the start of the comment lines right before this line: they open its rest
    for number in range(1, len(lines)):
        start += len(lines[number - 1]) + 1
        if not lines[number].strip():  # a blank line: its rest, stripped, is the next line's
            continue
        starts = _line_starts_sql(lines, number)
        if starts == _COMMENT:  # its rest starts as the next line's does
            comments = start if comments is None else comments
            continue
        froms, comments = ([start] if comments is None else [comments, start]), None
        if starts is False or (starts is None and unsure >= _MAX_UNSURE_LINES):
            continue
        unsure += starts is None
        for at in froms:  # the comment lines before it first, as they open its rest
            rest = _LABEL.sub("", stripped[at:].strip(), count=1)
            if rest and looks_like_sql(rest):
                return _checked(_trailing_prose_removed(rest), text, mode, "prose")
    _, colon, tail = lines[0].partition(":")  # "The query is: SELECT ...": the SQL after a prose line's colon
    rest = (tail + "\n" + "\n".join(lines[1:])).strip()
    if colon and tail.strip() and not tail.startswith(":") and looks_like_sql(rest):
        return _checked(_trailing_prose_removed(rest), text, mode, "label")
    if introduced:
        found = _no_sql(text, mode, "text")
    else:
        found = _checked(stripped, text, mode, "text")
    return empty if empty is not None and found.sql is None else found


def _after_prose_colon(text: str, first_line: str) -> str | None:
    """The query after the first ``:`` token of ``text``'s first line (``Select the rows: SELECT name FROM t``,
    ``Show me: SELECT ...``), when sqlglot parses that as queries and does not parse the whole text so (a ``:`` in a
    query, ``x::int``, ``:param`` or in a string, leaves a query that parses whole); else None."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.tokens import Tokenizer

    try:
        tokens = Dialect.get_or_raise("").tokenize(first_line)
    except Exception:  # noqa: BLE001 - a string left open on the line: read whole, as before
        return None
    colon = next((token.end for token in tokens if token.token_type.name == "COLON"), None)
    if colon is None and tokens and tokens[0].token_type in Tokenizer.COMMANDS and first_line.find(":") > 0:
        colon = first_line.find(":")  # "Show me: SELECT ...": a command's rest is one string token to the tokenizer
    if colon is None:
        return None
    after = _trailing_prose_removed(text[colon + 1:].strip())  # `text` starts with `first_line`
    if not looks_like_sql(after) or _rank(after) != 2 or _rank(_trailing_prose_removed(text)) == 2:
        return None
    return after


#: At most this many lines whose own text cannot say whether SQL starts there (a string left open, a label alone) are
#: read with the rest of the answer (each such read is the answer's length: many would be quadratic).
_MAX_UNSURE_LINES = 8
_COMMENT = "comment"


def _line_starts_sql(lines: list[str], number: int) -> bool | str | None:
    """Does the rest of the answer from line ``number`` (a leading label removed) start like SQL, as far as that line
    says (see :func:`_head_starts_sql`)? None when it cannot say, a label alone on its line included."""
    line = lines[number].strip()
    label = _LABEL.match(line)
    if label is None:
        return _head_starts_sql(line)
    line = line[label.end():]
    starts = _head_starts_sql(line) if line.strip() else None
    return None if starts == _COMMENT else starts  # "SQL: -- ...": the label's rest, read whole, decides


def _head_starts_sql(head: str) -> bool | str | None:
    """Does a text whose first line is ``head`` start like SQL, as far as that line says: its first token decides (it
    is the text's first token, whatever follows). ``_COMMENT`` when the line holds only a comment (the next line
    decides); None when it cannot say (a string or comment left open before any token, or a statement word first
    with a string left open after it: then the whole text decides, see :func:`_first_token`)."""
    from sqlglot.dialects.dialect import Dialect

    tokenizer = Dialect.get_or_raise("").tokenizer()
    try:
        tokens = tokenizer.tokenize(head)
    except Exception:  # noqa: BLE001 - a string or comment left open: the tokens before it
        tokens = list(getattr(tokenizer, "tokens", None) or [])
        if tokens and not _starts_sql(tokens[0], head):
            return False  # the whole text's first token too, when the whole reads (and no SQL when it does not)
        return None
    return _starts_sql(tokens[0], head) if tokens else _COMMENT


def _labelled_section(text: str) -> str | None:
    """The SQL of an answer in labelled sections: the text after a ``SQLQuery:`` (also ``SQL:``, ``Query:``; when none
    of them holds SQL, ``Answer:``) label opening a line, up to the next known label opening a line (``SQLResult:``,
    ``Answer:``, ``Question:``, ...) or the end. Only when such a section holds something that starts like SQL and
    another known section is in the answer (a lone ``SQL: ...`` is the label step's), and only when that is
    unambiguous: sections that sqlglot parses as queries win over those it parses otherwise, and those over sections
    that only start like SQL; then the first under
    LangChain's ``SQLQuery:`` (its chain stops there; a model that goes on writes the next question's turn), else
    the one such section (several that differ: None). A label line inside the SQL (in a string literal that spans
    lines) does not end it (see :func:`_section`)."""
    from ..sql.limits import MAX_SQL_CHARS

    if len(text) > MAX_SQL_CHARS:  # too long to score whatever it holds: no section is read
        return None
    labels = [(m, re.sub(r"[\s_-]", "", m.group(1)).lower()) for m in _SECTION.finditer(text)]
    labels = [(m, name) for m, name in labels if name in SQL_SECTIONS or name in OTHER_SECTIONS]
    if len(labels) < 2:
        return None
    for holding in (SQL_SECTIONS, ("answer", "finalanswer")):
        found = []
        for number, (match, name) in enumerate(labels):
            if name in holding and len(found) < _MAX_SECTIONS:
                section = _section(text, match.end(), [m.start() for m, _ in labels[number + 1:]])
                if section is not None:
                    found.append((name, *section))
        if found:
            break
    else:
        return None
    best = max(rank for _, _, rank in found)  # "Query: list shops" (prose; `list AS shops` to sqlglot), "SQL: SELECT ..."
    found = [f for f in found if f[2] == best]
    if found[0][0] == "sqlquery" or len({sql for _, sql, _ in found}) == 1:
        return found[0][1]
    return None


#: At most this many SQL sections are read, each across at most this many later labels and characters (the answer
#: is untrusted: a model repeating itself to its token limit writes thousands of labels).
_MAX_SECTIONS = 8
_MAX_LABELS_INSIDE = 4
_MAX_SECTION_CHARS = 20_000


def _section(text: str, start: int, ends: list[int]) -> tuple[str, int] | None:
    """The SQL section from ``start``, with its rank (2: parsed as queries, 1: parsed otherwise, 0: starts like SQL
    only), or None when it does not start like SQL. It ends at the next label, unless sqlglot's tokenizer cannot read
    the text before it whole (a string literal or comment left open, so the label line is inside it)."""
    candidates = [*ends[:_MAX_LABELS_INSIDE], len(text)]
    end = candidates[0]  # when none can be read whole: up to the next label (a syntax miss, with the SQL's text)
    for number, candidate in enumerate(candidates):
        if number and candidate - start > _MAX_SECTION_CHARS:
            break
        if _tokenizes(text[start:candidate]):
            end = candidate
            break
    body = _unquoted(text[start:end].strip())
    if not looks_like_sql(body):
        return None
    body = _trailing_prose_removed(body)
    return (body, _rank(body)) if _parses(body) else (body, 0)


def _rank(sql: str) -> int:
    """2: sqlglot parses ``sql`` as queries; 1: as something else (``list shops`` is the expression ``list AS shops``)."""
    from sqlglot import exp

    from ..sql.limits import parse_bounded

    try:  # a comment after the last `;` (`SELECT ...; -- all shops`) is a Semicolon tree holding it: no statement
        trees = [tree for tree in parse_bounded(sql, "") if tree is not None and not isinstance(tree, exp.Semicolon)]
    except Exception:  # noqa: BLE001 - sqlglot's errors, or beyond the parse limits
        return 1
    return 2 if trees and all(isinstance(tree, exp.Query) for tree in trees) else 1


def _unquoted(body: str) -> str:
    """``"SELECT ..."`` (a model quoting its SQL after the label): the query inside one pair of quotes or backticks."""
    if len(body) > 2 and body[0] == body[-1] and body[0] in "\"'`" and body[0] not in body[1:-1]:
        inner = body[1:-1].strip()
        if looks_like_sql(inner) and not looks_like_sql(body):
            return inner
    return body


def _tokenizes(sql: str) -> bool:
    """Can sqlglot's tokenizer read ``sql`` whole (no string, quoted name or comment left open)?"""
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise("").tokenize(sql)
    except Exception:  # noqa: BLE001 - sqlglot's TokenError
        return False
    return True


#: A line that opens or closes a fenced block; and one that is only a fence (no language tag), as a closing one is.
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
_BARE_FENCE_LINE = re.compile(r"[ \t]*(?:`{3,}|~{3,})[ \t]*")


def _prefilled_block(text: str) -> str | None:
    """The query of an answer that closes a fence it never opened: the prompt ended with the opening ```` ```sql ````
    (SQLCoder's and many completion prompts do), so the model wrote ``SELECT ...`` then ```` ``` ```` and maybe prose
    or example output after. Such an answer has an odd number of fence lines, the first one bare (an opening one
    usually names its language, and fences pair up otherwise), and no SQL after the last one (that is an unclosed
    final block, an answer cut off): its query is the text before that line, read by the
    other steps (a leading ``SQL:`` or prose line removed), when sqlglot parses it as queries; else None (and the
    fences are read as usual)."""
    fences = list(_FENCE_LINE.finditer(text))
    if len(fences) % 2 == 0 or _BARE_FENCE_LINE.fullmatch(fences[0].group(0)) is None:
        return None
    if looks_like_sql(text[fences[-1].end():].strip()):  # SQL after the last fence: an unclosed final block (cut off)
        return None
    head = text[:fences[0].start()].strip()
    if not head:
        return None
    found = _extract(head, "auto")
    return found.sql if found.sql is not None and _rank(found.sql) == 2 else None


#: A query in XML-style tags (``<sql>...</sql>``; also ``<query>``, ``<sql_query>``, ``<answer>``, any case), as a model
#: asked to put its SQL in tags writes it; an unclosed final tag (an answer cut off) counts.
_TAGGED = re.compile(r"<(sql|sql_query|sqlquery|query|answer)>(.*?)(?:</\1[ \t]*>|\Z)", re.DOTALL | re.IGNORECASE)


def _tagged_block(text: str) -> str | None:
    """The query of the last tagged block that starts like SQL (the last query among several), or None; only in an
    answer that does not itself start like SQL (a string literal holding ``<sql>`` inside a query is no tag)."""
    if looks_like_sql(text) and not _introduces(text.split("\n", 1)[0]):
        return None
    statements = [body for body in (m.group(2).strip() for m in _TAGGED.finditer(text)) if looks_like_sql(body)]
    if not statements:
        return None
    return next((body for body in reversed(statements) if _rank(body) == 2), statements[-1])


def _outside_fences(text: str) -> Extraction | None:
    """The SQL the ``auto`` steps find in ``text`` with its fenced blocks left out (each an empty line), or None."""
    rest = _without_fenced_blocks(text, _fenced_blocks(text))
    if not rest.strip() or _fenced_blocks(rest):
        return None
    found = _extract(rest, "auto")
    return found if found.sql is not None else None


def last_fenced_block(text: str) -> str | None:
    """The last SQL-tagged (or untagged) fenced block; else the last fenced block of any language; else None.
    Among them, the last query wins (not a ``CREATE INDEX`` the model suggests after it); else the last one that
    starts like SQL (not an untagged block of example output after the query); else the last one."""
    blocks = [(block.tag.lower(), block.body) for block in _fenced_blocks(text)]
    blocks = [(tag, body.strip()) for tag, body in blocks if body.strip()]
    if not blocks:
        return None
    sql_blocks = [body for tag, body in blocks if tag in SQL_FENCE_TAGS]
    candidates = sql_blocks or [body for _, body in blocks]
    statements = [body for body in candidates if looks_like_sql(body)]
    if len(statements) > 1:
        return next((body for body in reversed(statements) if _rank(body) == 2), statements[-1])
    return statements[-1] if statements else candidates[-1]


def _introduces(line: str) -> bool:
    """A prose line introducing what follows: it ends with a colon or opens with a one-word label (``Note:``).
    No SQL statement's first line does either (a colon inside a SQL comment does not count)."""
    line = line.strip()
    if "--" in line or "/*" in line:
        return False
    return (line.endswith(":") and not line.endswith("::")) or bool(_INTRO_LABEL.match(line))


#: A paragraph opening with Markdown (``**Explanation:**``, a ``- `` or ``* `` bullet, a ``#`` heading, a ``>`` quote,
#: a ``|`` table row): what a chat model writes after its query, never the rest of the query.
_MARKDOWN_PARAGRAPH = re.compile(r"\A[ \t]*(?:\*\*|__|[-*+][ \t]+(?![\d.(])\S|#{1,6}[ \t]|>|\|)")


def _trailing_prose_removed(sql: str) -> str:
    """Drop what follows the statement's ``;`` (on its line or a later one) when it does not start like SQL, and
    paragraphs after a blank line that do not start like SQL ("This query counts ...", ``**Explanation:**``)."""
    sql = _prose_after_semicolon(sql)
    lines = sql.split("\n")
    for number, line in enumerate(lines[:-1]):
        if line.rstrip().endswith(";"):
            after = "\n".join(lines[number + 1:]).strip()
            if after and not looks_like_sql(after):
                sql = "\n".join(lines[: number + 1])
            break
    paragraphs = re.split(r"\n\s*\n", sql)
    kept = [paragraphs[0]]
    for paragraph in paragraphs[1:]:
        if _MARKDOWN_PARAGRAPH.match(paragraph.lstrip("\n")) or (not looks_like_sql(paragraph.strip())
                                                                  and not _continues_sql(paragraph)):
            break
        kept.append(paragraph)
    return _explanation_removed("\n\n".join(kept).strip())


def _prose_after_semicolon(sql: str) -> str:
    """``SELECT ...; This query lists ...`` on one line: the text up to the statement's first ``;`` (a semicolon
    token, not one in a string or a comment) when a sentence follows (not SQL, a comment or another ``;``); else
    ``sql`` as it is."""
    from sqlglot.dialects.dialect import Dialect

    start = 0
    for _ in range(8):  # the first few `;` characters: prose after a query is short to reach
        index = sql.find(";", start)
        if index == -1:
            break
        start = index + 1
        try:
            tokens = Dialect.get_or_raise("").tokenize(sql[:index + 1])
        except Exception:  # noqa: BLE001 - a string or quoted name left open: this `;` is inside it
            continue
        if not tokens or tokens[-1].token_type.name != "SEMICOLON" or tokens[-1].end != index:
            continue  # inside a comment
        after = sql[index + 1:].strip()  # a sentence (its first character a letter), not a comment or a stray `;`
        return sql[:index + 1] if after[:1].isalpha() and not looks_like_sql(after) else sql
    return sql


def _explanation_removed(sql: str) -> str:
    """Drop an explanation on the lines right after the statement (``This query counts ...``, ``Note: ...``): from
    the first later line that opens with a plain word and ends like a sentence (``.`` or ``:``), when sqlglot
    parses the text before it but not the whole (a sentence inside a comment or a string stays)."""
    lines = sql.split("\n")
    cut = next((n for n in range(1, len(lines)) if lines[n].rstrip().endswith((".", ":"))
                and not lines[n].rstrip().endswith("::") and _first_token_type(lines[n].strip()) == "VAR"), None)
    if cut is None or _parses(sql):
        return sql
    head = "\n".join(lines[:cut]).rstrip()
    return head if _parses(head) else sql


def _parses(sql: str) -> bool:
    from ..sql.limits import parse_bounded

    try:
        return any(tree is not None for tree in parse_bounded(sql, ""))
    except Exception:  # noqa: BLE001 - sqlglot's errors, or beyond the parse limits
        return False


def _continues_sql(paragraph: str) -> bool:
    """A paragraph that continues a statement (``WHERE ...``, ``ORDER BY ...``, ``JOIN ...``)."""
    first = _first_token_type(paragraph.strip())
    return first not in (None, "VAR", "IDENTIFIER", "UNKNOWN") and first not in ("STRING", "NUMBER")


def _checked(sql: str, raw: str, mode: str, step: str) -> Extraction:
    if not sql:  # a label with nothing after it ("SQL:"): no code block is involved
        return Extraction(None, mode, step, "no_prediction", f"the model's answer has nothing after its label: "
                                                             f"{preview(raw)}")
    if not looks_like_sql(sql):
        return _no_sql(raw, mode, step)
    return Extraction(sql, mode, step)


def _no_sql(raw: str, mode: str, step: str) -> Extraction:
    """A ``no_sql`` miss, unless (in ``auto`` mode) the answer is JSON with a SQL key or holds an inline code span
    that sqlglot parses as one query: tried only here, so an answer that is SQL is never read this way."""
    if mode == "auto":
        for rescue, name in ((_json_sql, "json"), (_inline_query, "inline")):
            sql = rescue(raw)
            if sql:
                return Extraction(sql, mode, name)
    return Extraction(None, mode, step, "no_sql", f"the model's answer contains no SQL: {preview(raw)}")


def _json_sql(text: str) -> str | None:
    """``{"sql": "SELECT ..."}`` (also ``query``/``sql_query``, any case), alone, after prose or in a fenced block;
    also in an object inside it (``{"answer": {"sql": ...}}``, two levels down at most), the outer object's first;
    a list holding one query (``{"sql": ["SELECT ..."]}``) is that query (several are no answer: which one?)."""
    import json

    bodies = [block.body for block in _fenced_blocks(text)][::-1]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        bodies.append(text[start:end + 1])
    for body in bodies:
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            continue
        objects = [data] if isinstance(data, dict) else []
        for _ in range(3):  # the top level first, then objects inside it: {"answer": {"sql": ...}}
            for item in objects:
                for key, value in item.items():
                    if isinstance(value, list) and len(value) == 1:  # {"sql": ["SELECT ..."]}: one query, listed
                        value = value[0]
                    if str(key).lower() in JSON_SQL_KEYS and isinstance(value, str):
                        if looks_like_sql(value.strip()):
                            return value.strip()
                        fenced = last_fenced_block(value)  # {"sql": "```sql\nSELECT ...\n```"}: the query in it
                        if fenced is not None and looks_like_sql(fenced):
                            return fenced
            objects = [v for item in objects for v in item.values() if isinstance(v, dict)]
    return None


def _inline_query(text: str) -> str | None:
    """The last inline code span (`` `SELECT ...` ``, ``` ``SELECT ...`` ```) that sqlglot parses as one query."""
    from sqlglot import exp

    from ..sql.limits import parse_bounded

    for match in reversed(list(_SPAN.finditer(text))):
        span = match.group(2).strip()
        tagged = span.split(None, 1)
        if len(match.group(1)) >= 3 and len(tagged) == 2 and tagged[0].lower() in SQL_FENCE_TAGS:
            span = tagged[1].strip()  # ```sql SELECT ...``` on one line: a fence's language tag, then the query
        if not looks_like_sql(span):
            continue
        try:
            trees = [t for t in parse_bounded(span, "") if t is not None]
        except Exception:  # noqa: BLE001 - sqlglot's errors, or a span beyond the parse limits: not a query
            continue
        if len(trees) == 1 and isinstance(trees[0], exp.Query) and trees[0].selects:
            return span
    return None


def looks_like_sql(text: str) -> bool:
    """Does ``text`` start like a SQL statement? Read by sqlglot's generic tokenizer, the same for every engine."""
    head = text.lstrip()
    decided = _head_starts_sql(head[:head.find("\n")] if "\n" in head else head)
    if isinstance(decided, bool):
        return decided
    token = _first_token(text)
    return token is not None and _starts_sql(token, text)


def _starts_sql(token, text: str) -> bool:
    """Does ``token``, the first of ``text``, start a SQL statement?"""
    first = token.token_type.name
    if first != "L_PAREN" and not (token.text[:1].isalpha() or token.text[:1] == "_"):
        return False  # an operator (`~~~`, a tilde fence, reads as GLOB; `->`, `=>`, `!=`, `||`): no statement starts so
    if first == "VAR":
        word = text.lstrip("( \t\r\n")[:200].split(None, 1)
        return bool(word) and word[0].upper().rstrip(";") in STATEMENT_WORDS
    return first not in _NOT_A_START


def _first_token_type(text: str) -> str | None:
    """The type of ``text``'s first token (see :func:`_first_token`)."""
    token = _first_token(text)
    return None if token is None else token.token_type.name


def _first_token(text: str):
    """``text``'s first token. Its first line decides when sqlglot reads a token in it (the first token
    of the whole text is the same): tokenizing the whole text for one token, for each line of a long answer, took
    minutes on a model's degenerate repetition. Else the whole text decides (a string or comment opened on the first
    line, a first line that is a comment), and when the whole cannot be read, nothing does."""
    from sqlglot.dialects.dialect import Dialect

    dialect = Dialect.get_or_raise("")
    head = text.lstrip().split("\n", 1)[0]
    for candidate in (head, text):
        try:
            tokens = dialect.tokenize(candidate)
        except Exception:  # noqa: BLE001 - unbalanced quotes in prose, unknown characters, ...
            continue
        if tokens:
            return tokens[0]
    return None
