"""The in-rank monitor: wraps torch's placement APIs, watches optimizer steps, and checks the invariants.

Two kinds of checks:
- at the moment of a conversion or wrap (an optimizer holds parameters that were just replaced,
  state that was just made stale, a DDP model that was just converted);
- at optimizer steps: on the first WARMUP_CHECKS steps, every `check_every` steps, and on the
  next step after any placement event. Between check steps the hooks count, and probe whether
  a backward reached the optimizer's parameters at all (stopping at the first gradient found);
  a failed probe makes the next step a check step. The global forward hooks are only installed
  for the step before a check step, so `nn.Module.__call__` otherwise keeps its fast path.
"""
from __future__ import annotations

import functools
import os
import socket
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from . import diagnose
from . import invariants as inv
from .callsite import Site, caller_name, site_of, user_frame, user_site
from .config import MonitorConfig
from .findings import RuntimeFinding
from .fingerprint import change_sums, fingerprint, snapshot, update_norm
from .patching import Patcher
from .records import END, FINDING, INITIAL, START, STEP, RankRecorder
from .registry import DDPRecord, OptimizerRecord, PlacementEvent, Registry, ZeroInfo

_FULLY_SHARD_REEXPORTS = (
    "torch.distributed.fsdp._fully_shard",
    "torch.distributed.fsdp",
    "torch.distributed._composable.fsdp",
    "torch.distributed._composable.fsdp.fully_shard",
)
# Trace mode keeps a copy of the model's parameters across each step to measure the update; above
# this size (per rank) it does not, and the report shows no update norms rather than run out of memory.
UPDATE_SNAPSHOT_BYTES = 1 << 30
# Findings that explain a later cross-rank divergence.
_DIVERGENCE_CAUSES = ("DDP003", "DDP004", "DDP005", "DDP104")


class StepLimitReached(SystemExit):
    """Raised after `--max-steps` optimizer steps; the bootstrap turns it into a clean exit."""

    def __init__(self, steps: int) -> None:
        super().__init__(0)
        self.steps = steps


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _change(before: Tuple[torch.device, torch.dtype], after: Tuple[torch.device, torch.dtype]) -> str:
    parts = []
    if before[0] != after[0]:
        parts.append(f"{before[0]} -> {after[0]}")
    if before[1] != after[1]:
        parts.append(f"{_dtype_name(before[1])} -> {_dtype_name(after[1])}")
    return ", ".join(parts)


def _dist() -> Any:
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


class Monitor:
    """Everything one rank observes. `install()` patches torch, `uninstall()` restores it exactly.

    Findings go to `self.findings` and, when a recorder is given, to the rank's records file as
    they are found.
    """

    def __init__(self, config: Optional[MonitorConfig] = None, recorder: Optional[RankRecorder] = None) -> None:
        self.config = config or MonitorConfig()
        self.recorder = recorder
        self.registry = Registry()
        self.findings: List[RuntimeFinding] = []
        self._emitted: set = set()
        self._causes: List[RuntimeFinding] = []
        self._patcher = Patcher()
        self._step_hooks: List[Any] = []
        self._forward_hooks: List[Any] = []
        self._installed = False
        # Forward observation: the outermost modules called since the last step.
        self._roots: Dict[int, "weakref.ref[nn.Module]"] = {}
        self._roots_stamp = -1
        self._forward_depth = 0
        self._total_steps = 0
        self._any_dirty = True
        # Re-entrancy: torch's own wrappers call _apply and build optimizers internally.
        self._wrapper_depth = 0
        self._apply_depth = 0
        self._last_loss: Optional[torch.Tensor] = None
        self._backwards = 0
        self._in_step: Optional[OptimizerRecord] = None
        self._initial_written: set = set()  # optimizer indexes whose initial fingerprint is out
        self._before_step: Dict[int, Any] = {}  # trace: optimizer index -> the live parameters before its step
        self._diverged = False

    # ------------------------------------------------------------------ install
    def install(self) -> "Monitor":
        if self._installed:
            return self
        from torch.optim import Optimizer
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        p = self._patcher
        p.replace(Optimizer, "__init__", self._wrap_optimizer_init)
        p.replace(Optimizer, "load_state_dict", self._wrap_optimizer_load)
        p.replace(nn.Module, "_apply", self._wrap_apply)
        p.replace(nn.Module, "load_state_dict", self._wrap_module_load)
        p.replace(torch.autograd, "backward", self._wrap_backward)
        p.when_imported(
            "torch.nn.parallel.distributed",
            lambda m: p.replace(m.DistributedDataParallel, "__init__", self._wrap_ddp_init),
        )
        p.when_imported(
            "torch.distributed.fsdp.fully_sharded_data_parallel",
            lambda m: p.replace(m.FullyShardedDataParallel, "__init__", self._wrap_fsdp1_init),
        )
        p.when_imported(
            "torch.distributed.fsdp._fully_shard._fully_shard",
            lambda m: p.replace_function(m, "fully_shard", self._wrap_fully_shard, _FULLY_SHARD_REEXPORTS),
        )
        p.when_imported(
            "torch.distributed.tensor.parallel.api",
            lambda m: p.replace_function(
                m, "parallelize_module", self._wrap_parallelize, ("torch.distributed.tensor.parallel",)
            ),
        )
        p.when_imported(
            "torch.distributed.optim.zero_redundancy_optimizer",
            lambda m: p.replace(m.ZeroRedundancyOptimizer, "__init__", self._wrap_zero_init),
        )
        if self.config.backend:
            p.when_imported(
                "torch.distributed.distributed_c10d",
                lambda m: p.replace_function(
                    m, "init_process_group", self._wrap_init_process_group, ("torch.distributed",)
                ),
            )
        self._step_hooks = [
            register_optimizer_step_pre_hook(self._on_step_pre),
            register_optimizer_step_post_hook(self._on_step_post),
        ]
        self._open_window()
        self._installed = True
        # Where the rank runs, for naming it "rank 3 (node 1/local 1)" in a multi-node report.
        self._record(START, pid=os.getpid(), world_size=int(os.environ.get("WORLD_SIZE", "1")),
                     local_rank=int(os.environ.get("LOCAL_RANK", "0")),
                     group_rank=int(os.environ.get("GROUP_RANK", "0")), host=socket.gethostname())
        return self

    def uninstall(self) -> None:
        if not self._installed:
            return
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks = []
        self._close_window()
        self._patcher.restore_all()
        self._installed = False

    def __enter__(self) -> "Monitor":
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    # ------------------------------------------------------------------ reporting
    @property
    def rank(self) -> int:
        dist = _dist()
        if dist is not None:
            return dist.get_rank()
        return int(os.environ.get("RANK", "0"))

    def _record(self, kind: str, **payload: object) -> None:
        if self.recorder is not None:
            self.recorder.write(kind, **payload)

    def _emit(self, finding: RuntimeFinding) -> None:
        key = (finding.code, finding.path, finding.line, finding.message)
        if key in self._emitted:
            return
        self._emitted.add(key)
        finding.ranks = [self.rank]
        self.findings.append(finding)
        if finding.code in _DIVERGENCE_CAUSES:
            self._causes.append(finding)
        self._record(FINDING, **finding.to_json())

    def finish(self, exit_code: int, error: Optional[str] = None, stopped_at_max_steps: bool = False) -> None:
        """Write the rank's closing record (steps, the exception and the step it broke in)."""
        # From every record ever made: the optimizers are usually gone (garbage with the script's
        # locals) by the time the rank writes its closing record.
        steps = {str(r.index): r.steps for r in self.registry.all_records() if r.parent is None and r.steps}
        in_step = None
        if self._in_step is not None and error:
            in_step = {"optimizer": self._in_step.label, "step": self._in_step.steps}
        self._record(
            END,
            exit_code=exit_code,
            error=error,
            in_step=in_step,
            steps=steps,
            total_steps=self._total_steps,
            stopped_at_max_steps=stopped_at_max_steps,
        )

    # ------------------------------------------------------------------ wrappers
    def _wrap_optimizer_init(self, original: Callable[..., None]) -> Callable[..., None]:
        monitor = self

        @functools.wraps(original)
        def __init__(opt: Any, *args: Any, **kwargs: Any) -> None:
            original(opt, *args, **kwargs)
            if monitor.registry.optimizer(opt) is None:
                frame = user_frame()
                monitor.registry.add_optimizer(opt, site_of(frame))
                monitor._name_from_locals(frame)
                if monitor._installed:
                    monitor._open_window()  # its first step is a check step: observe the forward

        return __init__

    def _name_from_locals(self, frame: Any) -> None:
        # The optimizer does not know its model; the modules in scope where it was built give its
        # parameters names for later messages ("head.weight" rather than "2x8").
        if frame is None:
            return
        for value in list(frame.f_locals.values())[:64]:
            if isinstance(value, nn.Module):
                self.registry.remember_names(value.named_parameters())

    def _wrap_optimizer_load(self, original: Callable[..., None]) -> Callable[..., None]:
        monitor = self

        @functools.wraps(original)
        def load_state_dict(opt: Any, *args: Any, **kwargs: Any) -> None:
            original(opt, *args, **kwargs)
            record = monitor.registry.optimizer(opt)
            if record is not None and record.loaded_at is None:
                record.loaded_at = user_site()
            monitor._mark_dirty()

        return load_state_dict

    def _wrap_backward(self, original: Callable[..., None]) -> Callable[..., None]:
        monitor = self

        trace = self.config.trace

        @functools.wraps(original)
        def backward(tensors: Any, *args: Any, **kwargs: Any) -> None:
            monitor._backwards += 1
            # Only verify shows losses; detaching one costs microseconds on every step.
            if trace and isinstance(tensors, torch.Tensor) and tensors.numel() == 1:
                monitor._last_loss = tensors.detach()
            return original(tensors, *args, **kwargs)

        return backward

    def _wrap_apply(self, original: Callable[..., Any]) -> Callable[..., Any]:
        monitor = self

        @functools.wraps(original)
        def _apply(module: nn.Module, fn: Any, recurse: bool = True) -> Any:
            if monitor._apply_depth or monitor._wrapper_depth:
                return original(module, fn, recurse)
            op = caller_name(1)
            before = [(name, p, p.device, p.dtype) for name, p in module.named_parameters(recurse=recurse)]
            monitor._apply_depth += 1
            try:
                result = original(module, fn, recurse)
            finally:
                monitor._apply_depth -= 1
            monitor._after_apply(module, f".{op}()" if op else "._apply()", before, recurse)
            return result

        return _apply

    def _wrap_module_load(self, original: Callable[..., Any]) -> Callable[..., Any]:
        monitor = self

        @functools.wraps(original)
        def load_state_dict(module: nn.Module, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
            if not assign or monitor._wrapper_depth:
                return original(module, state_dict, strict, assign)
            return monitor._around_wrap(
                "load_state_dict(assign=True)", [module], lambda: original(module, state_dict, strict, assign),
                lambda result: list(module.parameters()),
            )

        return load_state_dict

    def _wrap_ddp_init(self, original: Callable[..., None]) -> Callable[..., None]:
        monitor = self

        @functools.wraps(original)
        def __init__(ddp: Any, *args: Any, **kwargs: Any) -> None:
            if monitor._wrapper_depth:
                return original(ddp, *args, **kwargs)
            module = args[0] if args else kwargs.get("module")
            site = user_site()
            monitor._wrapper_depth += 1
            try:
                original(ddp, *args, **kwargs)
            finally:
                monitor._wrapper_depth -= 1
            if isinstance(module, nn.Module):
                monitor._after_ddp(ddp, module, site)

        return __init__

    def _wrap_fsdp1_init(self, original: Callable[..., None]) -> Callable[..., None]:
        monitor = self

        @functools.wraps(original)
        def __init__(fsdp: Any, *args: Any, **kwargs: Any) -> None:
            if monitor._wrapper_depth:
                return original(fsdp, *args, **kwargs)
            module = args[0] if args else kwargs.get("module")
            orig_params = bool(kwargs.get("use_orig_params", False))
            monitor._around_wrap(
                "FullyShardedDataParallel()" if not orig_params else "FullyShardedDataParallel(use_orig_params=True)",
                [module] if isinstance(module, nn.Module) else [],
                lambda: original(fsdp, *args, **kwargs),
                lambda result: list(fsdp.parameters()),
                orig_params=orig_params,
            )

        return __init__

    def _wrap_fully_shard(self, original: Callable[..., Any]) -> Callable[..., Any]:
        monitor = self

        @functools.wraps(original)
        def fully_shard(module: Any, *args: Any, **kwargs: Any) -> Any:
            if monitor._wrapper_depth:
                return original(module, *args, **kwargs)
            modules = list(module) if isinstance(module, (list, tuple)) else [module]
            modules = [m for m in modules if isinstance(m, nn.Module)]
            return monitor._around_wrap(
                "fully_shard()", modules, lambda: original(module, *args, **kwargs),
                lambda result: [p for m in modules for p in m.parameters()],
            )

        return fully_shard

    def _wrap_parallelize(self, original: Callable[..., Any]) -> Callable[..., Any]:
        monitor = self

        @functools.wraps(original)
        def parallelize_module(module: Any, *args: Any, **kwargs: Any) -> Any:
            if monitor._wrapper_depth or not isinstance(module, nn.Module):
                return original(module, *args, **kwargs)
            return monitor._around_wrap(
                "parallelize_module()", [module], lambda: original(module, *args, **kwargs),
                lambda result: list((result if isinstance(result, nn.Module) else module).parameters()),
            )

        return parallelize_module

    def _wrap_zero_init(self, original: Callable[..., None]) -> Callable[..., None]:
        monitor = self

        @functools.wraps(original)
        def __init__(zero: Any, *args: Any, **kwargs: Any) -> None:
            original(zero, *args, **kwargs)
            record = monitor.registry.optimizer(zero) or monitor.registry.add_optimizer(zero, user_site())
            default = getattr(zero, "_default_device", None)
            record.zero = ZeroInfo(bool(getattr(zero, "parameters_as_bucket_view", False)), str(default))
            inner = getattr(zero, "optim", None)
            inner_record = monitor.registry.optimizer(inner) if inner is not None else None
            if inner_record is not None:
                inner_record.parent = record

        return __init__

    def _wrap_init_process_group(self, original: Callable[..., Any]) -> Callable[..., Any]:
        backend = self.config.backend

        @functools.wraps(original)
        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            # `--backend` overrides whatever the script asked for, positionally or by keyword.
            if args:
                args = (backend, *args[1:])
            else:
                kwargs["backend"] = backend
            return original(*args, **kwargs)

        return init_process_group

    # ------------------------------------------------------------------ placement events
    def _around_wrap(self, op: str, modules: Sequence[nn.Module], call: Callable[[], Any],
                     params_after: Callable[[Any], List[torch.Tensor]], orig_params: bool = False) -> Any:
        site = user_site()
        before = [(name, p) for m in modules for name, p in m.named_parameters()]
        self._wrapper_depth += 1
        try:
            result = call()
        finally:
            self._wrapper_depth -= 1
        after_ids = {id(p) for p in params_after(result)}
        self.registry.remember_names(before)
        replaced = [p for _, p in before if id(p) not in after_ids]
        if replaced:
            event = PlacementEvent(op, site, replaced=len(replaced), wrapper=op, orig_params=orig_params)
            self.registry.add_event(event, replaced)
            self._check_replacement(event, replaced)
        elif orig_params and before:
            kept = [p for _, p in before]
            event = PlacementEvent(op, site, converted=len(kept), change="resharded into flat-parameter views",
                                   wrapper=op, orig_params=True)
            self.registry.add_event(event, kept)
        self._mark_dirty()
        return result

    def _after_apply(self, module: nn.Module, op: str, before: List[Tuple[str, torch.Tensor, Any, Any]],
                     recurse: bool) -> None:
        after = dict(module.named_parameters(recurse=recurse))
        replaced = [(name, old) for name, old, _, _ in before if after.get(name) is not old]
        converted = [
            (name, p, (dev, dt)) for name, p, dev, dt in before
            if after.get(name) is p and (p.device != dev or p.dtype != dt)
        ]
        if not replaced and not converted:
            return
        site = user_site()
        self.registry.remember_names((name, p) for name, p, _, _ in before)
        if replaced:
            name, old = replaced[0]
            new = after.get(name)
            change = _change((old.device, old.dtype), (new.device, new.dtype)) if new is not None else ""
            event = PlacementEvent(op, site, replaced=len(replaced), change=change)
            olds = [old for _, old in replaced]
            self.registry.add_event(event, olds)
            self._check_replacement(event, olds)
        if converted:
            _, p, was = converted[0]
            event = PlacementEvent(op, site, converted=len(converted), change=_change(was, (p.device, p.dtype)))
            params = [p for _, p, _ in converted]
            self.registry.add_event(event, params)
            self._check_conversion(event, params)
        self._mark_dirty()

    def _after_ddp(self, ddp: Any, module: nn.Module, site: Optional[Site]) -> None:
        params = list(module.parameters())
        self.registry.remember_names(module.named_parameters())
        record = DDPRecord(
            weakref.ref(ddp), weakref.ref(module), site, [weakref.ref(p) for p in params],
            getattr(ddp, "process_group", None),
        )
        self.registry.add_ddp(record)
        if self._world_size() > 1:
            for _, opt_record, _ in self.registry.holders_of(params):
                if opt_record.parent is None and opt_record.steps > 0:
                    self._emit(diagnose.stepped_before_ddp(opt_record, record))
        self._mark_dirty()

    def _check_replacement(self, event: PlacementEvent, olds: List[torch.Tensor]) -> None:
        for _, record, _held in self.registry.holders_of(olds):
            if record.parent is not None:
                continue
            # Every parameter of this optimizer replaced so far, by this call and the earlier ones.
            params = record.params()
            replaced = [p for p in params if any(e.replaced for e in self.registry.events_by_param.get(p, ()))]
            events = [e for e in self.registry.events_for(replaced) if e.replaced]
            self._emit(diagnose.stale_after_replacement(
                record, len(params), replaced, self.registry.describe(replaced), events))

    def _check_conversion(self, event: PlacementEvent, params: List[torch.Tensor]) -> None:
        ddp = self.registry.ddp_of(params)
        if ddp is not None:
            self._emit(diagnose.convert_after_wrap(event, ddp, len(params)))
        for opt, record, held in self.registry.holders_of(params):
            if record.zero is not None:
                if record.zero.bucket_view:
                    self._emit(diagnose.zero_buckets_broken(record, len(held), [event], None))
                mismatch = inv.zero_device_mismatch(opt)
                if mismatch is not None:
                    self._emit(diagnose.zero_default_device(
                        record, mismatch[0], mismatch[1], self._backend(), [event], None))
            with_state = [p for p in held if inv.has_state(opt, p)]
            if with_state:
                self._emit(diagnose.state_before_conversion(record, len(with_state), event))

    # ------------------------------------------------------------------ forward window
    def _open_window(self) -> None:
        if self._forward_hooks:
            return
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self._forward_depth = 0
        self._forward_hooks = [
            register_module_forward_pre_hook(self._on_forward_pre),
            register_module_forward_hook(self._on_forward_post, always_call=True),
        ]

    def _close_window(self) -> None:
        for handle in self._forward_hooks:
            handle.remove()
        self._forward_hooks = []
        self._forward_depth = 0

    def _on_forward_pre(self, module: nn.Module, args: Any) -> None:
        if self._forward_depth == 0:
            if self._roots_stamp != self._total_steps:
                self._roots.clear()
                self._roots_stamp = self._total_steps
            self._roots[id(module)] = weakref.ref(module)
        self._forward_depth += 1

    def _on_forward_post(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._forward_depth > 0:
            self._forward_depth -= 1

    def _live(self, since_total: int) -> Optional[List[Tuple[str, torch.Tensor]]]:
        """Parameters of the modules called since `since_total` steps, or None when not observed."""
        if not self._roots or self._roots_stamp < since_total:
            return None
        seen = set()
        out: List[Tuple[str, torch.Tensor]] = []
        for ref in list(self._roots.values()):
            module = ref()
            if module is None:
                continue
            for name, p in module.named_parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append((name, p))
        return out

    def _mark_dirty(self) -> None:
        self._any_dirty = True
        for _, record in self.registry.live_optimizers():
            record.dirty = True
        if self._installed:
            self._open_window()

    # ------------------------------------------------------------------ steps
    # The two step hooks run on every step of every optimizer: their common path is kept to a
    # lookup, a few attribute updates and one comparison with the next scheduled check.
    def _record_for(self, opt: Any) -> OptimizerRecord:
        record = self.registry.optimizer(opt)
        if record is None:  # built before the monitor was installed, or unpickled
            record = self.registry.add_optimizer(opt, None)
        return record

    def _on_step_pre(self, opt: Any, args: Any, kwargs: Any) -> None:
        record = self._record_for(opt)
        if record.parent is not None:
            if record.parent.checking:
                self._check_state(opt, record, record.parent.steps)
            return
        record.steps += 1
        self._in_step = record
        if self.config.trace:
            if record.index not in self._initial_written:
                self._write_initial(record)
            self._before_step[record.index] = snapshot(self._live_now(), UPDATE_SNAPSHOT_BYTES)
        if record.dirty or record.steps >= record.next_check:
            record.checking = True
            record.since_total = record.last_total
            self._check_before_step(opt, record)
        elif self._backwards != record.backwards_seen and not inv.any_grad(opt):
            # The per-step probe: a backward ran and none of this optimizer's parameters got a
            # gradient. Diagnosing needs the forward roots, so check fully at the next step.
            record.dirty = self._any_dirty = True
        record.backwards_seen = self._backwards

    def _on_step_post(self, opt: Any, args: Any, kwargs: Any) -> None:
        record = self._record_for(opt)
        if record.parent is not None:
            return
        self._in_step = None
        if record.checking:
            self._check_after_step(opt, record)
            record.checking = record.dirty = False
            record.next_check = self.config.next_check_after(record.steps)
            # An optimizer that has not stepped yet checks at its first step anyway; it must not
            # hold the forward hooks open until then (a second phase's optimizer built early).
            self._any_dirty = any(r.dirty for _, r in self.registry.live_optimizers()
                                  if r.parent is None and r.steps > 0)
        self._total_steps += 1
        record.last_total = self._total_steps
        if self.config.trace:
            self._write_step(record)
        # Forward hooks only for the step before a check (optimizers stepping in lockstep share
        # the window; one stepping at its own pace may check without roots and skip I1/I2).
        if self.config.trace or self._any_dirty or record.steps + 1 >= record.next_check:
            self._open_window()
        elif self._forward_hooks:
            self._close_window()
        if self.config.max_steps and record.steps >= self.config.max_steps:
            raise StepLimitReached(record.steps)

    def _check_before_step(self, opt: Any, record: OptimizerRecord) -> None:
        step = record.steps
        params = record.params()
        meta = inv.meta_params(params)
        if meta:
            self._emit(diagnose.meta_optimizer(record, len(meta), self.registry.events_for(meta), step))
        live = self._live(record.since_total)
        if live is not None:
            self._check_coverage(opt, record, params, live, bool(meta))
            self._check_wrappers_used(live, step)
        self._check_state(opt, record, step)
        if record.zero is not None:
            unaliased = inv.zero_unaliased(opt)
            if unaliased:
                self._emit(diagnose.zero_buckets_broken(
                    record, len(unaliased), self.registry.events_for(unaliased), step))
            mismatch = inv.zero_device_mismatch(opt)
            if mismatch is not None:
                self._emit(diagnose.zero_default_device(
                    record, mismatch[0], mismatch[1], self._backend(), self.registry.events_for(params), step))
        # I5 watches two parameters with gradients (the first and the last): any optimizer that
        # works moves every parameter it has a non-zero gradient for, so two are enough, and
        # summing all of them twice per check step would cost as much as the rest together.
        with_grad = inv.with_grad(params)
        watched = with_grad[:1] + with_grad[-1:] if len(with_grad) > 1 else with_grad
        record.pre_step_sums = (watched, change_sums(watched)) if watched else None

    def _check_coverage(self, opt: Any, record: OptimizerRecord, params: List[torch.Tensor],
                        live: List[Tuple[str, torch.Tensor]], already_meta: bool) -> None:
        stale = inv.stale_params(params, {id(p) for _, p in live})
        if not stale or already_meta:
            return
        events = self.registry.events_for(stale)
        live_has_grad = any(p.grad is not None for _, p in live)
        if live_has_grad and not inv.with_grad(params):
            self._emit(diagnose.no_gradients(record, len(params), len(stale), events, record.steps))
            return
        stale_without_grad = [p for p in stale if p.grad is None]
        if not stale_without_grad:
            return
        owned = {id(p) for _, r in self.registry.live_optimizers() for p in r.params()}
        orphans = inv.orphan_grads(live, owned)
        if orphans:
            self._emit(diagnose.partial_coverage(
                record, self.registry.describe(stale_without_grad), len(stale_without_grad),
                [name for name, _ in orphans], events, record.steps))

    def _check_wrappers_used(self, live: List[Tuple[str, torch.Tensor]], step: int) -> None:
        roots = {id(ref()) for ref in self._roots.values() if ref() is not None}
        for ddp in self.registry.ddp_records:
            module = ddp.module()
            if module is None or id(module) not in roots:
                continue
            wrapper = ddp.wrapper()
            if wrapper is None or id(wrapper) not in roots:
                if any(p.grad is not None for p in module.parameters()):
                    self._emit(diagnose.discarded_wrapper(ddp, step))

    def _check_state(self, opt: Any, record: OptimizerRecord, step: int) -> None:
        mismatches = inv.state_mismatches(opt)
        if mismatches:
            events = self.registry.events_for([m.param for m in mismatches])
            self._emit(diagnose.state_mismatch(record, mismatches, events, step))

    def _check_after_step(self, opt: Any, record: OptimizerRecord) -> None:
        before = record.pre_step_sums
        record.pre_step_sums = None
        if before is not None:
            params, sums = before
            changed = change_sums(params) != sums
            if not changed and inv.all_lr_positive(opt) and inv.any_nonzero_grad(params):
                record.unchanged_checks += 1
                if record.unchanged_checks == 2:
                    self._emit(diagnose.no_effect(
                        record, self.registry.events_for(params), record.unchanged_checks, record.steps))
            else:
                record.unchanged_checks = 0
        # The cross-rank check is a collective: every rank must reach it at the same step. Only
        # the fixed schedule guarantees that (a dirty flag is rank-local), and only optimizers of
        # replicated parameters are stepped on every rank.
        if self.config.is_check_step(record.steps) and self._holds_replicated(record):
            self._check_replicas(record.steps)

    # ------------------------------------------------------------------ cross-rank
    def _world_size(self) -> int:
        dist = _dist()
        if dist is not None:
            return dist.get_world_size()
        return int(os.environ.get("WORLD_SIZE", "1"))

    def _backend(self) -> Optional[str]:
        dist = _dist()
        if dist is None:
            return self.config.backend
        try:
            return str(dist.get_backend())
        except Exception:  # a backend torch cannot name is not worth failing the step over
            return self.config.backend

    def _holds_replicated(self, record: OptimizerRecord) -> bool:
        if record.zero is not None:
            return True
        return self.registry.ddp_of(record.params()) is not None

    def _replicated(self) -> List[torch.Tensor]:
        """Parameters every rank must hold identically: under DDP, or stepped by ZeRO."""
        seen = set()
        out: List[torch.Tensor] = []
        for ddp in self.registry.ddp_records:
            module = ddp.module()
            for p in module.parameters() if module is not None else ():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
        for opt, record in self.registry.live_optimizers():
            if record.zero is not None:
                for p in record.params():
                    if id(p) not in seen:
                        seen.add(id(p))
                        out.append(p)
        return out

    def _check_replicas(self, step: int) -> None:
        dist = _dist()
        if dist is None or self._diverged or dist.get_world_size() < 2:
            return
        params = self._replicated()
        if not params:
            return
        device = torch.device("cpu")
        if self._backend() == "nccl" and torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())
        result = inv.replica_disagreement(params, device)
        if result is None or result[0] == 0:
            return
        self._diverged = True
        n_differ, n_total = result
        if self._causes:
            cause = self._causes[0]
            site = Site(cause.path, cause.line)
            self._emit(diagnose.divergence(cause.code, site, n_differ, n_total, step, cause.outcome))
            return
        ddp_site = next((d.site for d in self.registry.ddp_records if d.site is not None), None)
        self._emit(diagnose.divergence("DDP000", ddp_site, n_differ, n_total, step, diagnose.DIVERGED))

    # ------------------------------------------------------------------ trace (verify)
    def _live_now(self) -> List[torch.Tensor]:
        live = self._live(0) or []
        return [p for _, p in live]

    def _write_initial(self, record: OptimizerRecord) -> None:
        # Per optimizer: a helper that steps once (making a checkpoint, say) must not become the
        # baseline of the training loop's model.
        params = self._live_now()
        if not params:
            return
        self._initial_written.add(record.index)
        self._record(INITIAL, optimizer=record.index, fingerprint=fingerprint(params))

    def _write_step(self, record: OptimizerRecord) -> None:
        loss = None
        if self._last_loss is not None:
            try:
                loss = float(self._last_loss)
            except (RuntimeError, ValueError):
                loss = None
        params = self._live_now()
        before = self._before_step.pop(record.index, None)
        # Positions in the fingerprint of the parameters every rank must hold alike: the report
        # compares their sums across ranks, step by step (only where there are ranks to compare).
        replicated: List[int] = []
        if params and self._world_size() > 1:
            ids = {id(p) for p in self._replicated()}
            replicated = [i for i, p in enumerate(params) if id(p) in ids]
        self._record(
            STEP,
            optimizer=record.index,
            step=record.steps,
            loss=loss,
            update_norm=update_norm(before) if before is not None else None,
            fingerprint=fingerprint(params) if params else None,
            replicated=replicated,
        )
