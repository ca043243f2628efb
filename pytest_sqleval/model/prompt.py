"""Prompt templates: Jinja2 with ``StrictUndefined``, rendered into chat messages.

A template may define the blocks ``system`` and ``user``; each becomes a chat message of that role (text outside
them would never be sent: an error; ``{% set %}`` and ``{% macro %}`` there are for the blocks to use). A template
without blocks is rendered whole as the single user message. Placeholders:

``question``  the case's question
``schema``    the database schema, rendered in the suite's ``schema_format`` (``ddl``, ``spider``, ``compact``)
``dialect``   the SQL dialect (sqlglot's name: sqlite, duckdb, postgres, ...)
``evidence``  the case's ``evidence:`` (BIRD's external knowledge), or None
``history``   earlier turns of the interaction: a list of ``{question, sql}`` (empty for a single case)
``examples``  few-shot pairs: a list of ``{question, sql}``
``metadata``  the case's ``metadata:`` mapping
``case_id``   the case id (``<interaction>/<n>`` for a turn)

A name outside this list is an error naming it, found when the suite is loaded (not when the first case runs); so is
a template that uses none of the case's placeholders (``question``, ``evidence``, ``history``, ``examples``,
``metadata``, ``case_id``): every case would send the same prompt, such as ``prompt: prompts/sql.tpl`` naming a file
that does not exist, read as the text of the prompt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class PromptSource:
    """A prompt template's text and where it came from (``sha256`` keys the compiled templates and the cache)."""

    text: str
    origin: str  # "default", "inline" or the file path

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


PLACEHOLDERS = ("question", "schema", "dialect", "evidence", "history", "examples", "metadata", "case_id")
#: The placeholders that differ from case to case: a template with none of them sends every case the same prompt.
CASE_PLACEHOLDERS = ("question", "evidence", "history", "examples", "metadata", "case_id")

DEFAULT_PROMPT_TEXT = """\
{% block system %}
You are an expert in {{ dialect }} SQL. Given a database schema and a question, write one {{ dialect }} SQL query \
that answers the question. Reply with the query only, in a ```sql fenced code block.
{% endblock %}
{% block user %}
Database schema:
{{ schema }}

{% if examples %}
Examples:
{% for example in examples %}
Question: {{ example.question }}
SQL: {{ example.sql }}
{% endfor %}

{% endif %}
{% if history %}
Earlier questions in this conversation, with their SQL:
{% for turn in history %}
Q{{ loop.index }}: {{ turn.question }}
SQL{{ loop.index }}: {{ turn.sql if turn.sql else "(none)" }}
{% endfor %}

{% endif %}
{% if evidence %}
External knowledge: {{ evidence }}

{% endif %}
Question: {{ question }}
{% endblock %}
"""

DEFAULT_PROMPT = PromptSource(text=DEFAULT_PROMPT_TEXT, origin="default")


class TemplateProblem(ValueError):
    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix


class PromptTemplate:
    """A compiled template; :meth:`messages` renders one case's chat messages."""

    def __init__(self, source: PromptSource) -> None:
        import jinja2
        from jinja2 import meta

        self.source = source
        self.env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                      autoescape=False,  # noqa: S701 - prompts are text, not HTML
                                      finalize=_none_as_empty)
        from_file = source.origin not in ("default", "inline")  # a template file: messages name it and its line
        try:
            parsed = self.env.parse(source.text)
            undeclared = meta.find_undeclared_variables(parsed)  # compiles it: an unknown filter or test fails here
            self.template = self.env.from_string(source.text)
        except jinja2.TemplateSyntaxError as exc:
            where = f"{source.origin}:{exc.lineno}:" if from_file else f"line {exc.lineno} of the template:"
            raise TemplateProblem(f"{where} {exc.message}",
                                  "see https://jinja.palletsprojects.com/ for the template syntax") from None
        if any(True for _ in meta.find_referenced_templates(parsed)):
            raise TemplateProblem(f"{source.origin + ': ' if from_file else ''}{{% include %}}, {{% import %}} and "
                                  "{% extends %} are not supported (a prompt is one template)",
                                  "put the included text in the template, or few-shot pairs in `examples:`")
        # a {% set %} or {% macro %} outside the blocks: defined for the blocks (messages() runs them first)
        self.defined = _top_level_names(parsed) if self.template.blocks else set()
        #: the placeholders the template reads
        self.placeholders = frozenset(undeclared & set(PLACEHOLDERS))
        unknown = sorted(undeclared - set(PLACEHOLDERS) - self.defined)
        if unknown:
            line = _first_use(parsed, unknown)
            where = f" ({'first on ' if len(unknown) > 1 else ''}line {line} of the template)" if line else ""
            raise TemplateProblem(f"{source.origin + ': ' if from_file else ''}unknown placeholder {', '.join(unknown)}"
                                  f"{where}", f"the placeholders are: {', '.join(PLACEHOLDERS)}")
        if not undeclared & set(CASE_PLACEHOLDERS):  # every case would send one prompt (and share one cached answer)
            path_like = source.origin == "inline" and "\n" not in source.text.strip() and " " not in source.text.strip()
            raise TemplateProblem(
                f"{source.origin + ': ' if from_file else ''}the prompt template never uses {{{{ question }}}} (nor any "
                f"other placeholder of the case: {', '.join(CASE_PLACEHOLDERS[1:])}): every case would send the same "
                f"prompt" + (f" (the text {source.text.strip()!r}; if it is a file path, no such file exists)"
                             if path_like else ""),
                "write {{ question }} where the question goes"
                + ("; or point `prompt:` at an existing template file (relative to the suite)" if path_like else ""))
        self.blocks = [name for name in ("system", "user") if name in self.template.blocks]
        if self.blocks:  # only the blocks are sent: text outside them would silently never reach the model
            stray = next(_outside_blocks(parsed), None)
            if stray is not None:
                line, text = stray
                where = f"{source.origin}:{line}: " if from_file else f"line {line} of the template: "
                raise TemplateProblem(f"{where}text outside the {{% block system %}}/{{% block user %}} blocks is "
                                      f"never sent to the model: {text[:60]!r}",
                                      "move it into the system or user block (a template with blocks sends only "
                                      "those two; one without blocks is sent whole as the user message)")

    @property
    def sha256(self) -> str:
        return self.source.sha256

    def messages(self, values: Mapping[str, Any]) -> list[dict[str, str]]:
        import jinja2

        try:
            if not self.blocks:
                return [{"role": "user", "content": self.template.render(**values).strip()}]
            context = self.template.new_context(dict(values))
            if self.defined:  # run the top level once: its {% set %} and {% macro %} are then the blocks' to use
                for _ in self.template.root_render_func(context):
                    pass
            return [{"role": name, "content": "".join(self.template.blocks[name](context)).strip()}
                    for name in self.blocks]
        except jinja2.UndefinedError as exc:  # render() maps its frames to template lines; a block's frames are not
            where = self._where(exc, mapped=not self.blocks)
            raise TemplateProblem(f"{where}the prompt template uses an undefined value: {exc.message}",
                                  f"the placeholders are: {', '.join(PLACEHOLDERS)}") from None

    def _where(self, exc: BaseException, *, mapped: bool) -> str:
        """``file:line: `` of a template file's failing line (the last ``<template>`` frame: a template line when
        Jinja2 has ``mapped`` the traceback, else a line of the compiled code, mapped back here)."""
        if self.source.origin in ("default", "inline"):
            return ""
        line = None
        traceback = exc.__traceback__
        while traceback is not None:
            if traceback.tb_frame.f_code.co_filename == "<template>":
                line = traceback.tb_lineno if mapped else self.template.get_corresponding_lineno(traceback.tb_lineno)
            traceback = traceback.tb_next
        return f"{self.source.origin}:{line}: " if line else f"{self.source.origin}: "


def _none_as_empty(value: Any) -> Any:
    """What ``{{ value }}`` prints: nothing for None (``{{ evidence }}`` of a case without evidence, a metadata value
    written as null), not the text ``None``."""
    return "" if value is None else value


def _first_use(parsed, names) -> int | None:
    """The template line where one of ``names`` is first read (the line of a misspelt placeholder), or None."""
    from jinja2 import nodes

    lines = [node.lineno for node in parsed.find_all(nodes.Name) if node.ctx == "load" and node.name in names]
    return min(lines) if lines else None


def _top_level_names(parsed) -> set[str]:
    """The names a template's top level defines ({% set %}, {% macro %}), outside its blocks."""
    from jinja2 import nodes

    names: set[str] = set()
    for node in parsed.body:
        if isinstance(node, nodes.Macro):
            names.add(node.name)
        elif isinstance(node, (nodes.Assign, nodes.AssignBlock)):
            names.update(n.name for n in node.target.find_all(nodes.Name))
            if isinstance(node.target, nodes.Name):
                names.add(node.target.name)
    return names


def _outside_blocks(node):
    """(line, text) of each piece of output outside the ``system``/``user`` blocks (whitespace aside); another
    block's output counts as outside, as neither message holds it."""
    from jinja2 import nodes

    if isinstance(node, nodes.Block) and node.name in ("system", "user"):
        return
    if isinstance(node, (nodes.Macro, nodes.AssignBlock)):  # defines, prints nothing here
        return
    if isinstance(node, nodes.Output):
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                if child.data.strip():
                    yield child.lineno, child.data.strip()
            else:
                yield child.lineno, "{{ ... }}"
        return
    for child in node.iter_child_nodes():
        yield from _outside_blocks(child)


_compiled: dict[tuple[str, str], PromptTemplate] = {}


def compiled(source: PromptSource) -> PromptTemplate:
    """One compiled template per distinct text and origin (per process): its errors name its own file, not that of
    another file with the same text."""
    key = (source.sha256, source.origin)
    if key not in _compiled:
        _compiled[key] = PromptTemplate(source)
    return _compiled[key]
