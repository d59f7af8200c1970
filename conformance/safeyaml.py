"""One safe, bounded YAML loader for every YAML file the suite reads (cassettes replayed
or analysed, providers.yaml, the field sources).

YAML files here are data and may come from anyone (cassettes are committed and shared):
a tag that builds a Python object (``!!python/object/apply:os.system``) is refused, as is
any tag PyYAML's safe constructor does not know. Aliases are bounded: a document whose
aliases would add more than ``ALIAS_BUDGET`` nodes and characters when expanded (a
"billion laughs" file of a few hundred bytes grows to gigabytes in whatever walks it), or
whose aliases make it contain itself, is refused before anything is built. The check
walks the composed node graph once (each node once, its expanded size memoised), so it
costs what the file costs to parse. The suite's own cassettes hold no aliases at all.
"""

from __future__ import annotations

from typing import Any

import yaml

# Nodes plus characters that aliases may add to a document, expanded. Generous for a
# hand-written file that reuses a mapping a few times; a bomb needs millions.
ALIAS_BUDGET = 100_000
PYTHON_TAG = "tag:yaml.org,2002:python/"


class Refused(yaml.MarkedYAMLError):
    """A document that is valid YAML but is refused: ``problem`` is the one-line why and
    ``problem_mark`` where (as for a syntax error, so every caller reports it alike)."""


def _refuse(problem: str, node: yaml.Node) -> Refused:
    return Refused(problem=problem, problem_mark=node.start_mark)


def check(root: yaml.Node, budget: int = ALIAS_BUDGET) -> None:
    """Refuse a Python tag, a document that contains itself, or aliases that add more
    than ``budget`` when expanded (iterative: no recursion limit on what a file nests)."""
    expanded: dict[int, int] = {}  # node id -> its weight with every alias expanded
    own = 0  # the weight of the distinct nodes: what the text itself holds
    open_: set[int] = set()  # nodes whose children are being walked
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if node.tag.startswith(PYTHON_TAG):
            raise _refuse(
                f"refused: a Python tag (!!{node.tag[len('tag:yaml.org,2002:') :]}); "
                "YAML files here are data and never build objects",
                node,
            )
        if isinstance(node, yaml.ScalarNode):
            if key not in expanded:
                expanded[key] = 1 + len(node.value)
                own += expanded[key]
            continue
        kids = _children(node)
        if children_done:
            open_.discard(key)
            expanded[key] = 1 + sum(expanded[id(k)] for k in kids)
            own += 1
            if expanded[key] > own + budget:
                raise _refuse(
                    f"refused: its aliases expand to over {budget:,} more nodes "
                    "and characters than the file holds (an alias bomb)",
                    node,
                )
            continue
        if key in expanded:
            continue  # an alias of a node already walked: its size is known
        if key in open_:
            raise _refuse("refused: an alias makes the document contain itself", node)
        open_.add(key)
        stack.append((node, True))
        for k in kids:
            if id(k) in open_:
                raise _refuse("refused: an alias makes the document contain itself", k)
            if id(k) not in expanded:
                stack.append((k, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return [n for pair in node.value for n in pair]


class Checked:
    """A loader mixin: the node graph is checked (``check``) before it is constructed."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()  # type: ignore[attr-defined]
        if node is None:
            return None
        check(node)
        return self.construct_document(node)  # type: ignore[attr-defined]


class Loader(Checked, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader, checked; libyaml's parser where installed (faster on cassettes)."""


class PyLoader(Checked, yaml.SafeLoader):
    """The same in pure Python, for loaders that add their own constructors."""


def load(text: str | bytes, loader: type = Loader) -> Any:
    """``yaml.load`` with a checked safe loader (``Loader`` or a subclass of ``Checked``)."""
    if not issubclass(loader, Checked):
        raise TypeError("a checked loader is required")
    return yaml.load(text, Loader=loader)  # type: ignore[arg-type]  # noqa: S506 - a checked SafeLoader


__all__ = ["ALIAS_BUDGET", "Checked", "Loader", "PyLoader", "Refused", "check", "load"]
