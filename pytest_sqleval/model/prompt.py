"""Prompt templates: Jinja2 with ``StrictUndefined``, rendered into chat messages.

A template may define the blocks ``system`` and ``user``; each becomes a chat message of that role. A template
without blocks is rendered whole as the single user message. Placeholders:

``question``  the case's question
``schema``    the database schema, rendered in the suite's ``schema_format`` (``ddl``, ``spider``, ``compact``)
``dialect``   the SQL dialect (sqlglot's name: sqlite, duckdb, postgres, ...)
``evidence``  the case's ``evidence:`` (BIRD's external knowledge), or None
``history``   earlier turns of the interaction: a list of ``{question, sql}`` (empty for a single case)
``examples``  few-shot pairs: a list of ``{question, sql}``
``metadata``  the case's ``metadata:`` mapping
``case_id``   the case id (``<interaction>/<n>`` for a turn)

A name outside this list is an error naming it, found when the suite is loaded (not when the first case runs).
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
                                      autoescape=False)  # noqa: S701 - prompts are text, not HTML
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
        unknown = sorted(undeclared - set(PLACEHOLDERS))
        if unknown:
            raise TemplateProblem(f"{source.origin + ': ' if from_file else ''}unknown placeholder {', '.join(unknown)}",
                                  f"the placeholders are: {', '.join(PLACEHOLDERS)}")
        self.blocks = [name for name in ("system", "user") if name in self.template.blocks]

    @property
    def sha256(self) -> str:
        return self.source.sha256

    def messages(self, values: Mapping[str, Any]) -> list[dict[str, str]]:
        import jinja2

        try:
            if not self.blocks:
                return [{"role": "user", "content": self.template.render(**values).strip()}]
            context = self.template.new_context(dict(values))
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


_compiled: dict[str, PromptTemplate] = {}


def compiled(source: PromptSource) -> PromptTemplate:
    """One compiled template per distinct text (per process)."""
    key = source.sha256
    if key not in _compiled:
        _compiled[key] = PromptTemplate(source)
    return _compiled[key]
