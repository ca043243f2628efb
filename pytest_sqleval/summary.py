"""A suite's result: its aggregates and the verdict of each threshold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .aggregate import aggregate_suite
from .suite import Suite
from .thresholds import OVERALL_PREFIX, Threshold, Verdict, make_threshold, merge


@dataclass
class SuiteSummary:
    name: str
    path: str
    execution: dict[str, Any]
    exact_match_profile: str | None
    pass_if: str
    aggregates: dict[str, Any]
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    @property
    def failed_verdicts(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]


def summarize(suite: Suite, records: Sequence[Mapping[str, Any]], *, cli: Iterable[Threshold] = (),
              ini: Iterable[Threshold] = (), display_path: str | None = None) -> SuiteSummary:
    aggregates = aggregate_suite(records)
    suite_thresholds = [make_threshold(metric, value, "suite") for metric, value in suite.thresholds.items()]
    thresholds = [t for t in merge(cli, suite_thresholds, ini) if not t.metric.startswith(OVERALL_PREFIX)]
    return SuiteSummary(
        name=suite.name,
        path=display_path or str(suite.path),
        execution=suite.execution.as_dict(),
        exact_match_profile=_profile_name(suite.exact_match),
        pass_if=str(suite.pass_if),
        aggregates=aggregates,
        verdicts=[t.check(aggregates) for t in thresholds],
    )


def _profile_name(options: Any) -> str | None:
    """The exact-match profile's name, with the options the suite changed from the profile's own
    (``sqleval (values: ignore)``): scores under other options are not the profile's, and reports (and the gates
    comparing two of them) must tell them apart."""
    if options is None:
        return None
    name = getattr(options, "profile", None)
    if not name:
        return str(options)
    from .metrics.exact_match.options import EXACT_MATCH_PROFILES

    base = EXACT_MATCH_PROFILES.get(name)
    written = options.as_dict() if base is not None and hasattr(options, "as_dict") else {}
    changed = [f"{key}: {str(value).lower() if isinstance(value, bool) else value}"
               for key, value in written.items() if key != "profile" and getattr(base, key, value) != value]
    return f"{name} ({', '.join(changed)})" if changed else name
