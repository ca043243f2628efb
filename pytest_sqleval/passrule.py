"""``pass_if``: what makes one case pass.

Grammar (keywords are case-insensitive)::

    rule       := condition (("and" | "or") condition)*      # "and" binds tighter than "or"
    condition  := metric [operator number]
    operator   := ">=" | ">" | "<=" | "<" | "=="

A boolean metric alone (``execution_match``) holds when it is true; a score
needs an operator (``soft_f1 >= 0.8``). A metric that was not computed for a
case (``None``) never holds.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping

#: Per-case metrics a rule may use, and whether each is a 0/1 verdict or a score.
CASE_METRICS: dict[str, str] = {
    "valid": "bool",
    "execution_match": "bool",
    "exact_match": "bool",
    "soft_f1": "score",
}

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}


class PassRuleError(ValueError):
    pass


@dataclass(frozen=True)
class Condition:
    metric: str
    op: str | None = None
    value: float | None = None

    def holds(self, metrics: Mapping[str, Any]) -> bool:
        actual = metrics.get(self.metric)
        if actual is None:
            return False
        if self.op is None:
            return bool(actual)
        return _OPERATORS[self.op](float(actual), self.value)

    def __str__(self) -> str:
        return self.metric if self.op is None else f"{self.metric} {self.op} {self.value:g}"


@dataclass(frozen=True)
class PassRule:
    """Disjunction of conjunctions of conditions."""

    any_of: tuple[tuple[Condition, ...], ...]
    text: str

    @property
    def metrics(self) -> set[str]:
        return {c.metric for group in self.any_of for c in group}

    def holds(self, metrics: Mapping[str, Any]) -> bool:
        return any(all(c.holds(metrics) for c in group) for group in self.any_of)

    def __str__(self) -> str:
        return self.text


DEFAULT_PASS_RULE_TEXT = "execution_match"


def parse_pass_rule(text: str) -> PassRule:
    tokens = _tokenize(text)
    if not tokens:
        raise PassRuleError("pass_if is empty")
    groups: list[list[Condition]] = [[]]
    i = 0
    while True:
        condition, i = _parse_condition(tokens, i)
        groups[-1].append(condition)
        if i == len(tokens):
            break
        joiner = tokens[i].lower()
        if joiner == "or":
            groups.append([])
        elif joiner != "and":
            raise PassRuleError(f"expected 'and' or 'or' after {condition}, found {tokens[i]!r}")
        i += 1
        if i == len(tokens):
            raise PassRuleError(f"pass_if ends with {joiner!r}; a condition must follow")
    return PassRule(any_of=tuple(tuple(g) for g in groups), text=" ".join(tokens))


def _parse_condition(tokens: list[str], i: int) -> tuple[Condition, int]:
    metric = tokens[i]
    kind = CASE_METRICS.get(metric)
    if kind is None:
        raise PassRuleError(f"unknown metric {metric!r} in pass_if; per-case metrics are: {', '.join(CASE_METRICS)}")
    i += 1
    if i < len(tokens) and tokens[i] in _OPERATORS:
        op = tokens[i]
        if i + 1 >= len(tokens):
            raise PassRuleError(f"{metric} {op} needs a number")
        try:
            value = float(tokens[i + 1])
        except ValueError:
            raise PassRuleError(f"{metric} {op} needs a number, not {tokens[i + 1]!r}") from None
        return Condition(metric, op, value), i + 2
    if kind == "score":
        raise PassRuleError(f"{metric} is a score between 0 and 1: compare it, e.g. '{metric} >= 0.8'")
    return Condition(metric), i


def _tokenize(text: str) -> list[str]:
    """Split on white space, and around comparison operators written without spaces."""
    tokens: list[str] = []
    for word in str(text).split():
        tokens.extend(_split_operators(word))
    return tokens


def _split_operators(word: str) -> list[str]:
    for op in (">=", "<=", "==", ">", "<"):
        head, sep, tail = word.partition(op)
        if sep:
            return [t for t in (*_split_operators(head), op, *_split_operators(tail)) if t]
    return [word] if word else []
