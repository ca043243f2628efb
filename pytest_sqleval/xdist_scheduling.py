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

from .suite_files import is_suite_node_path


def interaction_scope(nodeid: str) -> str | None:
    """``file.sqleval.yaml::conv[2]`` -> ``file.sqleval.yaml::conv``; None for anything else."""
    path, sep, name = nodeid.rpartition("::")
    if not sep or not is_suite_node_path(path):
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


class CountedPending:
    """xdist's scope scheduler, in constant time per finished item (it is quadratic in the suite's size).

    ``LoadScopeScheduling`` recounts every unit ever assigned to a node after each finished item
    (``_pending_of``), and again for ``tests_finished``/``has_pending`` on every event, and finds each item's
    index with ``list.index``: with one unit per case, a 100,000-case suite spends its controller's time there.
    Here each node's pending items are counted as units are assigned and items finish, and indexes come from a
    dict; the decisions are the same (more work when a node has at most 2 pending items).
    """

    def _pending_counts(self) -> dict:
        return self.__dict__.setdefault("_sqleval_pending", {})

    def _index_of(self, node) -> dict:
        indexes = self.__dict__.setdefault("_sqleval_indexes", {})
        if node not in indexes:
            indexes[node] = {nodeid: i for i, nodeid in enumerate(self.registered_collections[node])}
        return indexes[node]

    def _assign_work_unit(self, node) -> None:
        assert self.workqueue
        scope, work_unit = self.workqueue.popitem(last=False)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        index = self._index_of(node)
        nodeids_indexes = [index[nodeid] for nodeid, completed in work_unit.items() if not completed]
        counts = self._pending_counts()
        counts[node] = counts.get(node, 0) + len(nodeids_indexes)
        node.send_runtest_some(nodeids_indexes)

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        work_unit = self.assigned_work[node][self._split_scope(nodeid)]
        if not work_unit[nodeid]:
            counts = self._pending_counts()
            counts[node] = counts.get(node, 0) - 1
        work_unit[nodeid] = True
        self._reschedule(node)

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_counts().get(node, 0) > 2:
            return
        self._assign_work_unit(node)

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.workqueue:
            return False
        counts = self._pending_counts()
        return all(counts.get(node, 0) < 2 for node in self.assigned_work)

    @property
    def has_pending(self) -> bool:
        if self.workqueue:
            return True
        counts = self._pending_counts()
        return any(counts.get(node, 0) > 0 for node in self.assigned_work)

    def remove_node(self, node):
        self._pending_counts().pop(node, None)
        self.__dict__.get("_sqleval_indexes", {}).pop(node, None)
        return super().remove_node(node)


class InteractionScheduling(CountedPending, CrashedItemNotRerun, LoadScopeScheduling):
    """``load`` scheduling, except that an interaction's turns form one scope (crashed items not rerun)."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # an explicit xdist_group (`nodeid@group`, as xdist reads it);
            return nodeid.split("@")[-1]  # an '@' in a folder or an interaction id comes before the turn's `[n]`
        return interaction_scope(nodeid) or nodeid
