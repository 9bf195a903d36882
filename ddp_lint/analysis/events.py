"""What the analysis hands to the rules: model handles and the ordered events of one scope."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, List, Optional, Tuple

import libcst as cst


@dataclass(frozen=True)
class Handle:
    """A reference to (part of) one module object: `self.model.encoder` is (id of self.model, ("encoder",))."""

    obj: int
    sub: Tuple[str, ...] = ()
    text: str = ""

    def overlaps(self, other: "Handle") -> bool:
        if self.obj != other.obj:
            return False
        shorter = min(len(self.sub), len(other.sub))
        return self.sub[:shorter] == other.sub[:shorter]


@dataclass(frozen=True)
class Site:
    """Where an event happens: its node, the statements that contain it, and the branches above it."""

    order: int
    node: cst.CSTNode
    chain: Tuple[cst.CSTNode, ...]  # statements from the scope's own block down to the innermost one
    branches: Tuple[Tuple[int, int], ...] = ()  # (id of the if/try node, arm index) for exclusivity
    guards: Tuple[cst.BaseExpression, ...] = ()  # tests of the `if`s that guard it, outermost first
    loops: int = 0
    via: Optional[str] = None  # "setup_model()" when it happens inside a helper called here

    @property
    def statement(self) -> cst.CSTNode:
        return self.chain[-1]

    def exclusive_with(self, other: "Site") -> bool:
        """True when the two sit in different arms of the same `if` and so never both run."""
        arms = dict(self.branches)
        return any(key in arms and arms[key] != arm for key, arm in other.branches)


@dataclass
class HolderEvent:
    site: Site
    kind: str  # catalog holder kind
    label: str  # "SGD", "build_optimizer()"
    models: FrozenSet[Handle]
    var: Optional[str] = None
    bucket_view: bool = False


@dataclass
class PlacementEvent:
    site: Site
    handle: Handle
    kind: str  # catalog placement class
    label: str
    sync_wrapper: bool = False
    ddp: bool = False
    argument_text: str = ""  # `.to(device)`'s argument, to tell a repeated no-op move
    operation: str = ""  # the method or function name: `to_empty`, `float`, `fully_shard`


@dataclass
class StateEvent:
    site: Site
    holder: HolderEvent
    method: str  # "step" or "load_state_dict"


@dataclass
class ManagedEvent:
    site: Site
    holders: Tuple[HolderEvent, ...]
    label: str


@dataclass
class RebindEvent:
    """The variable that held a holder now holds a new holder: the old one is superseded."""

    site: Site
    old: HolderEvent
    new: Optional[HolderEvent]


@dataclass
class DiscardedWrapperEvent:
    site: Site
    handle: Optional[Handle]
    label: str


@dataclass
class ForwardEvent:
    """A module handle is called (`model(x)`): training or evaluation runs through it here."""

    site: Site
    handle: Handle


@dataclass
class ScopeEvents:
    """The ordered events of one scope (module, function, or a class's methods taken together)."""

    name: str
    events: List[object] = field(default_factory=list)

    def of_type(self, kind: type) -> List:
        return [event for event in self.events if isinstance(event, kind)]
