"""``pass_if``: what makes one case pass.

Grammar (keywords are case-insensitive)::

    rule       := condition (("and" | "or") condition)*      # "and" binds tighter than "or"
    condition  := metric [operator number] | "exact_match" "(" clause ("," clause)* ")"
    operator   := ">=" | ">" | "<=" | "<" | "=="

A boolean metric alone (``execution_match``) holds when it is true; a score
needs an operator (``soft_f1 >= 0.8``). A metric that was not computed for a
case (``None``) never holds. ``exact_match(select, where)`` holds when those
clauses match (for any one of the case's accepted golds). ``policy`` holds when
the case's SQL policy has no violation (and for a case without a policy).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .registry import active_registry
from .thresholds import did_you_mean, same_value


def clause_names() -> tuple[str, ...]:
    """Every clause ``exact_match(...)`` may name (the sqleval profile's; spider has the first eleven)."""
    from .metrics.exact_match.verdict import SPIDER_CLAUSES, SQLEVAL_EXTRA_CLAUSES

    return SPIDER_CLAUSES + SQLEVAL_EXTRA_CLAUSES

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}


#: Operators of other languages a user may write (``=`` of SQL, ``=>``, ``!=``): each is named in the message with
#: the one pass_if takes, instead of the rule reading as a score that was never compared.
_OTHER_OPERATORS: dict[str, str | None] = {"=": "==", "=>": ">=", "=<": "<=", "!=": None, "<>": None}


class PassRuleError(ValueError):
    pass


#: Per-case scores that lie between 0 and 1: a rule comparing them with a number outside can never hold (or
#: always holds), which would turn every case into a silent miss.
UNIT_SCORES = ("soft_f1", "bird_soft_f1")


@dataclass(frozen=True)
class Condition:
    metric: str
    op: str | None = None
    value: float | None = None
    clauses: tuple[str, ...] | None = None  # exact_match(select, where): only these clauses

    def holds(self, metrics: Mapping[str, Any]) -> bool:
        if self.clauses is not None:
            # one clause verdict mapping per accepted gold; the condition holds for any one of them
            clause_sets = metrics.get("clause_sets") or ([metrics["clauses"]] if metrics.get("clauses") else [])
            return any(all(c.get(name) for name in self.clauses) for c in clause_sets if c)
        actual = metrics.get(self.metric)
        if isinstance(actual, Mapping):  # a {"passed": ...} verdict (a user's metric): its verdict, as aggregated
            actual = actual.get("passed")
        if actual is None:
            return False
        if self.op is None:
            return bool(actual)
        actual = float(actual)
        if same_value(actual, self.value):  # equal up to the last bits of float arithmetic (BIRD's soft F1 of
            return self.op in ("==", ">=", "<=")  # 3/4 is 0.7499999999999999): as a threshold reads it
        return _OPERATORS[self.op](actual, self.value)

    def __str__(self) -> str:
        if self.clauses is not None:
            return f"{self.metric}({', '.join(self.clauses)})"
        return self.metric if self.op is None else f"{self.metric} {self.op} {self.value:g}"


@dataclass(frozen=True)
class PassRule:
    """Disjunction of conjunctions of conditions."""

    any_of: tuple[tuple[Condition, ...], ...]
    text: str

    @property
    def metrics(self) -> set[str]:
        return {c.metric for group in self.any_of for c in group}

    @property
    def clauses(self) -> set[str]:
        """The clauses named by ``exact_match(...)`` conditions."""
        return {name for group in self.any_of for c in group for name in (c.clauses or ())}

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
    return PassRule(any_of=tuple(tuple(g) for g in groups), text=_join(tokens))


def _join(tokens: list[str]) -> str:
    """The rule's text: tokens joined by spaces, except around the parentheses and commas of a clause list."""
    text = ""
    for token in tokens:
        if text and token not in ("(", ")", ",") and not text.endswith("("):
            text += " "
        text += token
    return text


def _parse_condition(tokens: list[str], i: int) -> tuple[Condition, int]:
    metric = tokens[i]
    known = active_registry().pass_if_metrics()  # record keys, each bool or score
    kind = known.get(metric)
    if kind is None:
        registered = active_registry().get(metric)
        if registered is not None and not registered.in_pass_if:  # registered, but not for pass_if: say so
            raise PassRuleError(f"unknown metric {metric!r} in pass_if: it is registered with in_pass_if=False (a "
                                f"suite figure, not a case's value); per-case metrics are: {', '.join(known)}")
        raise PassRuleError(f"unknown metric {metric!r} in pass_if{did_you_mean(metric, known)}; per-case metrics "
                            f"are: {', '.join(known)}")
    i += 1
    if i < len(tokens) and tokens[i] == "(":
        if metric != "exact_match":
            raise PassRuleError(f"only exact_match takes a clause list, as in exact_match(select, where); not {metric}")
        return _parse_clauses(tokens, i)
    if i < len(tokens) and tokens[i] in _OTHER_OPERATORS:
        written, instead = tokens[i], _OTHER_OPERATORS[tokens[i]]
        value = tokens[i + 1] if i + 1 < len(tokens) else "0.8"
        hint = (f"write '{metric}' alone (it holds when true)" if kind != "score" and instead == "==" else
                f"write '{metric} {instead} {value}'" if instead else
                f"pass_if has no 'not equal': write e.g. '{metric} < {value}' (or '> {value}')")
        raise PassRuleError(f"'{written}' is not an operator of pass_if (its operators are {', '.join(_OPERATORS)}); "
                            f"{hint}")
    if i < len(tokens) and tokens[i] in _OPERATORS:
        op = tokens[i]
        if i + 1 >= len(tokens):
            raise PassRuleError(f"{metric} {op} needs a number")
        try:
            value = float(tokens[i + 1])
        except ValueError:
            raise PassRuleError(f"{metric} {op} needs a number, not {tokens[i + 1]!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise PassRuleError(f"{metric} {op} needs a finite number, not {tokens[i + 1]!r}")
        if metric in UNIT_SCORES and not 0.0 <= value <= 1.0:
            raise PassRuleError(f"{metric} is a score from 0 to 1, so '{metric} {op} {tokens[i + 1]}' cannot decide "
                                f"a case; compare it with a number from 0 to 1, e.g. '{metric} >= 0.8'")
        return Condition(metric, op, value), i + 2
    if kind == "score":
        raise PassRuleError(f"{metric} is a score: compare it, e.g. '{metric} >= 0.8'")
    return Condition(metric), i


def _parse_clauses(tokens: list[str], i: int) -> tuple[Condition, int]:
    """``exact_match ( name , name ... )`` starting at the ``(`` token."""
    valid = clause_names()
    names: list[str] = []
    i += 1
    while True:
        if i >= len(tokens):
            raise PassRuleError("exact_match( is not closed: write e.g. exact_match(select, where)")
        name = tokens[i].lower()
        if name in (")", ","):
            raise PassRuleError(f"exact_match(...) needs clause names separated by commas; valid clauses: {', '.join(valid)}")
        if name not in valid:
            raise PassRuleError(f"unknown clause {tokens[i]!r} in exact_match(...); valid clauses: {', '.join(valid)}")
        names.append(name)
        i += 1
        if i >= len(tokens):
            raise PassRuleError("exact_match( is not closed: write e.g. exact_match(select, where)")
        if tokens[i] == ")":
            return Condition("exact_match", clauses=tuple(names)), i + 1
        if tokens[i] != ",":
            raise PassRuleError(f"expected ',' or ')' after {name} in exact_match(...), found {tokens[i]!r}")
        i += 1


def _tokenize(text: str) -> list[str]:
    """Split on white space, around comparison operators written without spaces, and around ( , )."""
    tokens: list[str] = []
    for word in str(text).replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split():
        tokens.extend(_split_operators(word))
    return tokens


def _split_operators(word: str) -> list[str]:
    for op in (">=", "<=", "==", "!=", "<>", "=>", "=<", ">", "<", "="):
        head, sep, tail = word.partition(op)
        if sep:
            return [t for t in (*_split_operators(head), op, *_split_operators(tail)) if t]
    return [word] if word else []
