"""YAML read with line numbers: every mapping and list remembers where it starts, every key its line.

The suite loader's messages name the line of the value at fault; PyYAML's safe loader forgets positions,
so the loaders here attach them (``LineMapping.key_lines``, ``LineSequence.item_lines``). Reading also
refuses what a safe loader would accept but a suite must not hold: keys that are not text, duplicate keys
(YAML keeps the last silently) and aliases that expand a small file into millions of values.
"""

from __future__ import annotations

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
        mapping.key_lines[key] = key_node.start_mark.line + 1
    return mapping


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineSequence:
    seq = LineSequence(loader.construct_object(child, deep=True) for child in node.value)
    seq.line = node.start_mark.line + 1
    seq.item_lines = [child.start_mark.line + 1 for child in node.value]
    return seq


for _loader in (_LineLoader, _CLineLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


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


def read_yaml(path: Path) -> Any:
    """The document of ``path`` (mappings and lists with line numbers); any problem is a SuiteError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read the suite: {exc.strerror}", path=path) from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"the file is not UTF-8 ({exc.reason} at byte {exc.start})", path=path,
                         line=exc.object[:exc.start].count(b"\n") + 1, fix="save the suite as UTF-8") from None
    try:
        loader = _line_loader()(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if "&" in text:  # without an anchor (`&name`) there is no alias, so nothing can expand
                _check_alias_expansion(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
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

