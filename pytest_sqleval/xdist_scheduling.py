"""Keep the turns of an interaction together, in order, on one xdist worker.

Under the default ``--dist load`` (and ``loadgroup``), the plugin schedules with
:class:`InteractionScheduling`: the turns ``<suite file>::<interaction>[1]``,
``[2]``, ... form one unit of work, sent whole to one worker in collection
order; every other item is a unit of its own, as with ``load``. It works on node
ids alone, on the controller, so it needs nothing from the workers.
``--dist loadscope`` and ``loadfile`` keep a suite file on one worker anyway;
``worksteal`` may split an interaction and is left as the user chose it.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling, LoadScopeScheduling

from .collect import SUITE_SUFFIXES, YAML_SUFFIXES


def interaction_scope(nodeid: str) -> str | None:
    """``file.sqleval.yaml::conv[2]`` -> ``file.sqleval.yaml::conv``; None for anything else."""
    path, sep, name = nodeid.rpartition("::")
    if not sep or not path.endswith(SUITE_SUFFIXES + YAML_SUFFIXES):
        return None
    interaction, bracket, rest = name.partition("[")
    if not bracket or not rest.endswith("]") or not rest[:-1].isdigit():
        return None
    return f"{path}::{interaction}"


class CrashedItemNotRerun:
    """A crashed worker's item is reported as crashed (the plugin records it as an ``error`` of its case)
    and is *not* sent again (xdist's scope schedulers would send it to every replacement worker, which
    crashes each in turn); the rest of its unit goes back to the queue for the replacement or any other."""

    def remove_node(self, node):
        workload = self.assigned_work.pop(node)
        crashitem = None
        for scope, work_unit in list(workload.items()):
            for nodeid, completed in work_unit.items():
                if not completed and crashitem is None:
                    crashitem = nodeid
                    work_unit[nodeid] = True
            if not self._pending_of({scope: work_unit}):
                del workload[scope]
        if workload:
            self.workqueue.update(workload)
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem


class FileScheduling(CrashedItemNotRerun, LoadFileScheduling):
    """``--dist loadfile``, with crashed items not rerun."""


class ScopeScheduling(CrashedItemNotRerun, LoadScopeScheduling):
    """``--dist loadscope``, with crashed items not rerun."""


class InteractionScheduling(CrashedItemNotRerun, LoadScopeScheduling):
    """``load`` scheduling, except that an interaction's turns form one scope (crashed items not rerun)."""

    def _split_scope(self, nodeid: str) -> str:
        if "@" in nodeid:  # an explicit xdist_group under --dist loadgroup
            return nodeid.split("@")[-1]
        return interaction_scope(nodeid) or nodeid
