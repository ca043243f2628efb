"""YAML read with line numbers: every mapping and list remembers where it starts, every key its line.

The suite loader's messages name the line of the value at fault; PyYAML's safe loader forgets positions,
so the loaders here attach them (``LineMapping.key_lines``, ``LineSequence.item_lines``). Reading also
refuses what a safe loader would accept but a suite must not hold: keys that are not text, duplicate keys
(YAML keeps the last silently) and aliases that expand a small file into millions of values. NEL, U+2028 and
U+2029 are text, as in YAML 1.2 and JSON, not the line breaks of YAML 1.1 (a SQL text keeps them as written);
where YAML 1.1 would read another value, that is an error naming the value and the fix (an escape).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from .errors import SuiteError

#: How far YAML aliases (``*anchor``) may expand a document beyond its own nodes (billion-laughs guard).
MAX_ALIAS_EXPANSION = 1_000_000


class LineMapping(dict):
    """A YAML mapping that knows its first line and the line of each key."""

    line: int = 0
    key_lines: dict[str, int]
    #: Keys whose value came from a `<<: *anchor` merge key (their key_lines are the anchor's lines, not this mapping's).
    merged_keys: frozenset[str] = frozenset()
    #: The `id:` value as written in the file, when it is a scalar (for messages about what YAML made of it).
    id_text: str | None = None
    #: Plain scalars YAML read as numbers, as written (`question: 3.10` is 3.1, `1_000` 1000, `1:30` 90), for
    #: the keys that take text.
    number_texts: dict[str, str]


class LineSequence(list):
    """A YAML list that knows its first line and the line of each item."""

    line: int = 0
    item_lines: list[int]


class _LineLoader(yaml.SafeLoader):
    """A safe loader whose mappings and lists remember their line numbers."""


class _CLineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The same on libyaml's parser (about 10x faster on large suites), when PyYAML has it."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _merged_pairs(node: yaml.MappingNode, seen: frozenset[int] = frozenset()) -> list[tuple[yaml.Node, yaml.Node]]:
    """The pairs a mapping's ``<<:`` keys bring in, in an order where the last pair of a key is the one YAML keeps:
    in ``<<: [*a, *b]`` the keys of ``a`` override those of ``b`` (the merge key spec; PyYAML's own flattening
    lets ``b`` win), and in each merged mapping its own keys override what it merges in turn."""
    pairs: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        if key_node.tag != _MERGE_TAG:
            continue
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for source in reversed(sources):  # the first mapping listed is added last: it wins
            if not isinstance(source, yaml.MappingNode):  # named at the `<<:` key (an alias's own line is elsewhere)
                raise yaml.constructor.ConstructorError(
                    None, None, f"expected a mapping or list of mappings for merging, but found {source.id} "
                    f"(`<<:` merges an anchored mapping: `<<: *base`, or `<<: [*a, *b]`)", key_node.start_mark)
            if id(source) in seen:  # `&a {<<: *a}` cannot be written, but a recursive merge must not loop
                continue
            pairs.extend(_merged_pairs(source, seen | {id(node)}))
            pairs.extend(pair for pair in source.value if pair[0].tag != _MERGE_TAG)
    return pairs


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineMapping:
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:value":  # a `=` key: text, as PyYAML's flatten_mapping makes it
            key_node.tag = "tag:yaml.org,2002:str"
    own_pairs = [pair for pair in node.value if pair[0].tag != _MERGE_TAG]
    merged = 0  # how many pairs come from `<<:` keys (before the mapping's own)
    if len(own_pairs) != len(node.value):
        from_merges = _merged_pairs(node)
        merged = len(from_merges)
        node = yaml.MappingNode(node.tag, from_merges + own_pairs, node.start_mark, node.end_mark)
    from_merge: set[str] = set()  # keys whose value came from a `<<: *anchor` (a key of the mapping overrides)
    mapping = LineMapping()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    mapping.number_texts = {}
    for index, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            kind = "list" if isinstance(key, list) else "mapping" if isinstance(key, dict) else type(key).__name__
            shown = f"{key!r}" if isinstance(key, (int, float, bool, type(None))) else f"a {kind}"
            raise SuiteError(
                f"a mapping key must be text, not {shown}",
                line=key_node.start_mark.line + 1,
                fix="quote the key (`\"1\": ...`, `\"yes\": ...`); YAML reads 1, yes, no, null and [..] as other types",
            )
        if index < merged:
            from_merge.add(key)
        elif key in from_merge:
            from_merge.discard(key)  # `<<: *base` then `id: b`: the mapping's own key wins, as YAML says
        elif key in mapping:
            raise SuiteError(
                f"duplicate key {key!r} (first on line {mapping.key_lines[key]})",
                line=key_node.start_mark.line + 1,
                fix="keep one of them; YAML would silently drop the first",
            )
        mapping[key] = value = loader.construct_object(value_node, deep=True)
        if key == "id" and type(value) is int and value_node.value != str(value):  # `id: 010` is 8 in YAML 1.1
            raise SuiteError(
                f"the id {value_node.value} reads as the number {value} in YAML",
                line=key_node.start_mark.line + 1,
                fix=f"quote it: `id: \"{value_node.value}\"` (a leading 0 is octal, 0x hex, and _ is dropped)",
            )
        if key == "id" and isinstance(value_node, yaml.ScalarNode):
            mapping.id_text = value_node.value  # as written: `id: yes` is True, `id: 1.50` is 1.5
        elif type(value) in (int, float) and isinstance(value_node, yaml.ScalarNode):
            mapping.number_texts[key] = value_node.value
        mapping.key_lines[key] = key_node.start_mark.line + 1
    if from_merge:
        mapping.merged_keys = frozenset(from_merge)
    return mapping


#: Characters YAML 1.1 (PyYAML, libyaml) reads as line breaks and YAML 1.2 and JSON as ordinary text: NEL, LINE
#: SEPARATOR, PARAGRAPH SEPARATOR. Read as breaks, an unquoted `gold: SELECT 1<U+2028> FROM t` lost its spaces and a
#: trailing one its character, and a quoted U+0085 became a space: the SQL run was not the SQL written.
UNICODE_BREAKS = "\x85\u2028\u2029"


def _unicode_break_tables(text: str) -> tuple[dict[int, str], dict[int, str]] | None:
    """Tables that swap each of UNICODE_BREAKS in ``text`` for a private-use character absent from it (so the parser
    reads it as text, as YAML 1.2 does) and back; None when the text holds none (the common case)."""
    present = [ch for ch in UNICODE_BREAKS if ch in text]
    if not present:
        return None
    free = (chr(code) for code in range(0xE000, 0xF900) if chr(code) not in text)
    stand_ins = dict(zip(present, free))
    if len(stand_ins) < len(present):  # a file that holds every private-use character: read as YAML 1.1 does
        return None
    return ({ord(ch): sub for ch, sub in stand_ins.items()}, {ord(sub): ch for ch, sub in stand_ins.items()})


def _construct_str(loader: _LineLoader, node: yaml.ScalarNode) -> str:
    value = loader.construct_scalar(node)
    back = getattr(loader, "unicode_breaks_back", None)
    return value.translate(back) if back else value


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineSequence:
    seq = LineSequence(loader.construct_object(child, deep=True) for child in node.value)
    seq.line = node.start_mark.line + 1
    seq.item_lines = [child.start_mark.line + 1 for child in node.value]
    return seq


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    """YAML's integer; one longer than Python reads (``sys.get_int_max_str_digits()``, 4300 digits) is a YAML error
    naming its line, not a ValueError out of PyYAML."""
    try:
        return yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None, None, f"a number longer than the {sys.get_int_max_str_digits()} digits Python reads",
            node.start_mark) from None


for _loader in (_LineLoader, _CLineLoader):
    _loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG, _construct_str)


def _line_loader() -> type:
    """libyaml's loader, unless its compiled module holds node classes of an earlier import of ``yaml`` (a
    process that reloaded PyYAML, e.g. pytester's in-process runs): it would then build nodes no constructor knows."""
    try:
        from yaml import _yaml

        if _yaml.MappingNode is yaml.nodes.MappingNode and _yaml.ScalarNode is yaml.nodes.ScalarNode:
            return _CLineLoader
    except (ImportError, AttributeError):
        pass
    return _LineLoader


def suite_text(path: Path) -> str:
    """The text of a suite file: UTF-8, with or without a byte-order mark, or UTF-16 when it starts with that BOM
    (Windows editors and PowerShell 5's ``>`` save it); the BOM is no part of the text. Raises OSError and
    UnicodeDecodeError (its ``object`` the file's bytes, so a position maps to a line)."""
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def read_yaml(path: Path) -> Any:
    """The document of ``path`` (mappings and lists with line numbers); any problem is a SuiteError naming the file."""
    try:
        text = suite_text(path)
    except OSError as exc:
        raise SuiteError(f"cannot read the suite: {exc.strerror}", path=path) from None
    except UnicodeDecodeError as exc:
        encoding = "UTF-16, as its byte-order mark says" if exc.encoding.startswith("utf-16") else "UTF-8"
        raise SuiteError(f"the file is not {encoding} ({exc.reason} at byte {exc.start})", path=path,
                         line=exc.object[:exc.start].count(b"\n") + 1, fix="save the suite as UTF-8") from None
    tables = _unicode_break_tables(text)
    try:
        document = _document(text, tables)
        if tables is not None:
            _check_unicode_breaks(text, document)
        return document
    except SuiteError as exc:
        raise SuiteError(exc.message, path=path, line=exc.line, fix=exc.fix) from None
    except RecursionError:
        raise SuiteError("the YAML is nested too deeply to read", path=path,
                         fix="flatten the structure (a suite needs only a few levels of nesting)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if problem == "but found another document":  # PyYAML's words for a second `---` document
            raise SuiteError("a suite file holds one YAML document, and a second one starts here", path=path,
                             line=mark.line + 1 if mark else None,
                             fix="remove this `---` (or move the second document into a suite file of its own)") from None
        line = mark.line + 1 if mark else None
        fix = "check the indentation and quoting around this line (quote SQL that contains ': ' or starts with a special character)"
        if mark is not None and 0 <= mark.index < len(text) and text[mark.index] == "\t":  # libyaml names no tab
            problem = f"a tab at column {mark.column + 1}, where YAML expects indentation or a space (YAML indents " \
                      f"with spaces only)"
            fix = "replace the tab with spaces (after a list's `-` too: `- id: a`)"
        if str(problem).startswith("a number longer than"):
            fix = "quote it to keep it as text (\"123...\"), or shorten it"
        if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses (a control character): where it is
            character = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
            problem = f"the character U+{character:04X} is not allowed in YAML ({exc.reason})"
            line = text[:exc.position].count("\n") + 1
            fix = f"remove it, or write it as an escape inside double quotes (\"\\u{character:04x}\")"
        context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and context_mark is not None and line is not None and context_mark.line + 1 != line:
            # `gold: "SELECT 1` never closed: the problem is at the end of the file, its cause where the quote opened
            problem = f"{problem} ({context.removeprefix('while ')} that starts on line {context_mark.line + 1})"
            if problem.startswith("found unexpected end of stream"):
                line = context_mark.line + 1
        raise SuiteError(
            f"invalid YAML: {problem}",
            path=path,
            line=line,
            fix=fix,
        ) from None


def _document(text: str, tables: tuple[dict[int, str], dict[int, str]] | None) -> Any:
    """The document of ``text``; with ``tables`` (:func:`_unicode_break_tables`), NEL, U+2028 and U+2029 read as text."""
    loader = _line_loader()(text.translate(tables[0]) if tables else text)
    loader.unicode_breaks_back = tables[1] if tables else None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" in text:  # without an anchor (`&name`) there is no alias, so nothing can expand
            _check_alias_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


_BREAK_NAMES = {"\x85": "NEXT LINE (NEL)", "\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR"}


def _check_unicode_breaks(text: str, document: Any) -> None:
    """A raw NEL, U+2028 or U+2029 is text in YAML 1.2 and JSON (``document``) but a line break in YAML 1.1 (PyYAML,
    libyaml, and what ``yaml.safe_dump`` writes for it): where the two readings give another value, which one the
    author meant cannot be told, so it is an error naming the value and the fix (an escape reads the same in both).
    A file that only YAML 1.2 can read (YAML 1.1 refuses it) is read as YAML 1.2."""
    try:
        as_yaml_1_1 = _document(text, None)
    except (yaml.YAMLError, SuiteError, RecursionError):
        return
    path = _first_difference(document, as_yaml_1_1)
    if path is None:
        return
    value, other = document, as_yaml_1_1
    line, key, case, turn = None, None, None, None
    for container, step in path:
        if isinstance(container, LineMapping):
            line, key = container.key_lines.get(step, container.line), step
            if isinstance(container.get("id"), (str, int)) and not isinstance(container.get("id"), bool):
                case, turn = container["id"], None
        elif isinstance(container, LineSequence):
            line = container.item_lines[step]
            turn = step + 1 if key == "interaction" else turn
        value, other = container[step], other[step]
    found = next((ch for ch in (value if isinstance(value, str) else "") if ch in UNICODE_BREAKS), None)
    if found is None:  # not inside one value (a comment, the space between values): its first place in the file
        found = next(ch for ch in text if ch in UNICODE_BREAKS)
        line, key, case = text[:text.index(found)].count("\n") + 1, None, None
    where = (f"`{key}:`" if key is not None else "this line") + (f" of case {str(case)!r}" if case is not None else "") \
        + (f" (turn {turn})" if turn is not None and case is not None else "")
    readings = (f": YAML 1.2 reads {value!r}, YAML 1.1 {other!r}"
                if isinstance(value, str) and isinstance(other, str) and len(value) + len(other) <= 160 else "")
    escape = {"\x85": "\\N", "\u2028": "\\u2028", "\u2029": "\\u2029"}[found]
    raise SuiteError(
        f"{where} holds the character U+{ord(found):04X} ({_BREAK_NAMES[found]}) written as is, a line break for "
        f"YAML 1.1 readers (PyYAML, and the files yaml.safe_dump writes) and text for YAML 1.2 and JSON; here the two "
        f"readings differ{readings}",
        line=line or 1,
        fix=f"write it as an escape inside double quotes (`{key or 'gold'}: \"... {escape} ...\"`), "
            "or remove it if it is not meant to be there")


def _first_difference(a: Any, b: Any, path: tuple = ()) -> tuple | None:
    """The path ((container of ``a``, key or index), ...) to the first value where ``a`` and ``b`` differ, else None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return path
        for key in a:
            found = _first_difference(a[key], b[key], (*path, (a, key)))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return path
        for index, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, (*path, (a, index)))
            if found is not None:
                return found
        return None
    same = type(a) is type(b) and (a == b or (a != a and b != b))  # NaN (`.nan`) is itself
    return None if same else path


def item_lines_as_written(path: Path, key: str) -> list[int]:
    """The line of each item of the top-level ``key:`` list as written: an item that is an alias (``- *case``) at
    the alias's own line, where the constructed list (:class:`LineSequence`) has the anchored node's. For error
    messages only (it parses the file again); [] when the file cannot be read."""
    try:
        text = suite_text(path)
        tables = _unicode_break_tables(text)
        events = yaml.parse(text.translate(tables[0]) if tables else text, Loader=_line_loader())
        lines: list[int] = []
        depth, expect_key, inside, target = 0, False, False, False
        for event in events:
            starts = isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent,
                                        yaml.SequenceStartEvent))
            if inside and depth == 2 and starts:
                lines.append(event.start_mark.line + 1)
            if depth == 1 and starts:  # a key or a value of the top-level mapping
                if expect_key:
                    inside = False
                    target = isinstance(event, yaml.ScalarEvent) and event.value == key
                else:
                    inside = target and isinstance(event, yaml.SequenceStartEvent)
                expect_key = not expect_key
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth == 1:
                    expect_key, target = True, False
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
                if depth == 1:
                    inside = False
        return lines
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return []


def _check_alias_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand to more than MAX_ALIAS_EXPANSION extra nodes, or refer to themselves."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in active:
            raise SuiteError("a YAML alias refers to the node that contains it (a recursive structure)",
                             line=node.start_mark.line + 1, fix="remove the recursive `*alias`")
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in active:
                raise SuiteError("a YAML alias refers to the node that contains it (a recursive structure)",
                                 line=child.start_mark.line + 1, fix="remove the recursive `*alias`")
            if id(child) not in sizes:
                stack.append((child, False))
    if sizes[id(root)] - len(sizes) > MAX_ALIAS_EXPANSION:
        raise SuiteError(
            f"YAML aliases (*anchor references) expand this file to {sizes[id(root)]:,} values, more than "
            f"{MAX_ALIAS_EXPANSION:,} beyond what is written (an alias bomb?)",
            line=1, fix="use anchors for small shared values only (a database, a SQL text), not nested lists of lists")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []

