"""`--dist loadgroup` without its bookkeeping cost growing with the square of the test count.

pytest-xdist's scope schedulers keep every unit a worker was ever given, finished or not,
and count a worker's pending tests by walking all of them after every test it completes
(pytest-xdist issue 279, open); they also find each test's index by a linear search of the
worker's collection (issue 1212). With one unit per test (`loadgroup` outside the groups)
and 5,000 tests, the controller spent more CPU on that than on anything else it does. This
scheduler drops a unit once all its tests are done (nothing reads a finished unit: the
pending counts, the end of the run and a crashed worker's restart all look only for tests
not done) and looks indexes up in a dict; which tests go where, and when, is unchanged.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController


class PrunedLoadGroupScheduling(LoadGroupScheduling):
    def mark_test_complete(
        self, node: WorkerController, item_index: int, duration: float = 0
    ) -> None:
        nodeid = self.registered_collections[node][item_index]
        workload = self.assigned_work[node]
        scope = self._split_scope(nodeid)
        unit = workload[scope]
        unit[nodeid] = True
        if all(unit.values()):
            del workload[scope]
        self._reschedule(node)

    def _assign_work_unit(self, node: WorkerController) -> None:
        scope, unit = self.workqueue.popitem(last=False)
        self.assigned_work.setdefault(node, {})[scope] = unit
        if not hasattr(self, "_indexes"):
            self._indexes: dict[WorkerController, dict[str, int]] = {}
        index = self._indexes.get(node)
        if index is None:
            collection = self.registered_collections[node]
            index = self._indexes[node] = {nodeid: i for i, nodeid in enumerate(collection)}
        node.send_runtest_some([index[nodeid] for nodeid, done in unit.items() if not done])
