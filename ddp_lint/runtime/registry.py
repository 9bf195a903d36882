"""What the monitor remembers about optimizers, placements and wrappers, held weakly so it never keeps a model alive."""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

import torch
from torch.utils.weak import WeakIdKeyDictionary

from .callsite import Site


_EVENT_SEQUENCE = itertools.count()


@dataclass
class ZeroInfo:
    bucket_view: bool
    default_device: str


@dataclass(eq=False)
class OptimizerRecord:
    ref: "weakref.ref[Any]"
    index: int
    class_name: str
    site: Optional[Site]
    loaded_at: Optional[Site] = None
    steps: int = 0
    # ZeRO builds an inner optimizer over this rank's shard; its checks are the outer one's.
    parent: Optional["OptimizerRecord"] = None
    zero: Optional[ZeroInfo] = None
    dirty: bool = True
    next_check: int = 1  # the next scheduled check step (config.next_check_after)
    # Whether the step now running gets the full checks, and the monitor's total step count
    # after this optimizer's previous step (forward roots older than that are not its own).
    checking: bool = False
    last_total: int = 0
    since_total: int = 0
    backwards_seen: int = 0  # the monitor's backward count at this optimizer's last step
    unchanged_checks: int = 0
    # Parameters with a gradient and their sums before the step now running (check steps only).
    pre_step_sums: Optional[Tuple[List[torch.Tensor], List[float]]] = None

    def params(self) -> List[torch.Tensor]:
        opt = self.ref()
        if opt is None:
            return []
        return [p for group in opt.param_groups for p in group["params"]]

    @property
    def label(self) -> str:
        return self.class_name


@dataclass(eq=False)
class PlacementEvent:
    """One call that moved, cast, replaced or wrapped parameters."""

    op: str  # e.g. ".double()", "to_empty()", "fully_shard()", "FullyShardedDataParallel()"
    site: Optional[Site]
    replaced: int = 0
    converted: int = 0
    change: str = ""  # "float32 -> float64", "cpu -> cuda:0"
    wrapper: str = ""
    orig_params: bool = False  # FSDP1 use_orig_params=True keeps the Parameter objects
    # When it happened, among this process's events: messages name the calls in the order they ran.
    seq: int = field(default_factory=lambda: next(_EVENT_SEQUENCE), compare=False, repr=False)


@dataclass(eq=False)
class DDPRecord:
    wrapper: "weakref.ref[Any]"
    module: "weakref.ref[Any]"
    site: Optional[Site]
    params: List["weakref.ref[torch.Tensor]"] = field(default_factory=list)
    process_group: Any = None

    def live_params(self) -> List[torch.Tensor]:
        out = []
        for ref in self.params:
            p = ref()
            if p is not None:
                out.append(p)
        return out


class Registry:
    def __init__(self) -> None:
        self._optimizers: "weakref.WeakKeyDictionary[Any, OptimizerRecord]" = weakref.WeakKeyDictionary()
        # The step hooks look records up twice per step; a dict by id is several times faster
        # than the WeakKeyDictionary (which builds a weakref per lookup). Entries leave with
        # their optimizer through the record's weakref callback.
        self._by_id: Dict[int, OptimizerRecord] = {}
        self._all: List[OptimizerRecord] = []
        self._count = 0
        # Events keyed by the parameter they touched: old objects for replacements, the same
        # object for conversions. Weak on the tensor, so dead models drop out.
        self.events_by_param: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self.ddp_by_param: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self.ddp_records: List[DDPRecord] = []
        self.param_names: WeakIdKeyDictionary = WeakIdKeyDictionary()

    # optimizers
    def all_records(self) -> List[OptimizerRecord]:
        """Every optimizer seen, alive or not (their step counts outlive them)."""
        return list(self._all)

    def add_optimizer(self, opt: Any, site: Optional[Site]) -> OptimizerRecord:
        record = self.optimizer(opt)
        if record is None:
            self._count += 1
            key = id(opt)
            by_id = self._by_id
            ref = weakref.ref(opt, lambda _, key=key: by_id.pop(key, None))
            record = OptimizerRecord(ref, self._count, type(opt).__name__, site)
            self._optimizers[opt] = record
            self._by_id[key] = record
            self._all.append(record)
        return record

    def optimizer(self, opt: Any) -> Optional[OptimizerRecord]:
        record = self._by_id.get(id(opt))
        if record is not None and record.ref() is opt:
            return record
        return None

    def live_optimizers(self) -> List[Tuple[Any, OptimizerRecord]]:
        return sorted(self._optimizers.items(), key=lambda item: item[1].index)

    def holders_of(self, params: Iterable[torch.Tensor]) -> List[Tuple[Any, OptimizerRecord, List[torch.Tensor]]]:
        """Live optimizers holding any of `params`, with the ones each holds."""
        wanted = {id(p) for p in params}
        out = []
        for opt, record in self.live_optimizers():
            held = [p for p in record.params() if id(p) in wanted]
            if held:
                out.append((opt, record, held))
        return out

    # events
    def add_event(self, event: PlacementEvent, params: Iterable[torch.Tensor]) -> None:
        for p in params:
            events = self.events_by_param.get(p)
            if events is None:
                self.events_by_param[p] = [event]
            elif event not in events:
                events.append(event)

    def events_for(self, params: Iterable[torch.Tensor]) -> List[PlacementEvent]:
        """The events that touched any of `params`, in the order they ran."""
        out: List[PlacementEvent] = []
        for p in params:
            for event in self.events_by_param.get(p, ()):
                if event not in out:
                    out.append(event)
        return sorted(out, key=lambda e: e.seq)

    # DDP
    def add_ddp(self, record: DDPRecord) -> None:
        self.ddp_records = [r for r in self.ddp_records if r.module() is not None]
        self.ddp_records.append(record)
        for p in record.live_params():
            self.ddp_by_param[p] = record

    def ddp_of(self, params: Iterable[torch.Tensor]) -> Optional[DDPRecord]:
        for p in params:
            record = self.ddp_by_param.get(p)
            if record is not None:
                return record
        return None

    # names
    def remember_names(self, named: Iterable[Tuple[str, torch.Tensor]]) -> None:
        # First name wins: the earliest view is usually the whole model's, later ones may be a
        # submodule's ("norm.weight" from fully_shard(block) rather than "blocks.0.norm.weight").
        for name, p in named:
            if p not in self.param_names:
                self.param_names[p] = name

    def describe(self, params: List[torch.Tensor], limit: int = 4) -> str:
        """`0.weight, 0.bias, ...` where names are known, else shapes."""
        parts = []
        for p in params[:limit]:
            name = self.param_names.get(p)
            parts.append(name if name else "x".join(str(s) for s in p.shape) or "scalar")
        if len(params) > limit:
            parts.append(f"... {len(params) - limit} more")
        return ", ".join(parts)
