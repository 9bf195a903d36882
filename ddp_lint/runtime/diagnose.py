"""Turn a broken invariant into a finding: the rule code it proves, where, and why it matters."""
from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence, Tuple

from .callsite import Site
from .findings import ERROR, RULES, WARNING, RuntimeRelated, RuntimeFinding
from .invariants import StateMismatch
from .registry import DDPRecord, OptimizerRecord, PlacementEvent

STALE = "optimizer stepped stale parameters"
STATE = "optimizer state does not match its parameters"
DDP_HOOKS_LOST = "ranks trained apart: DDP's gradient hooks were lost"
DDP_UNUSED = "ranks trained apart: the DDP wrapper was never used"
ZERO_BUCKETS = "ranks trained apart: ZeRO's buckets no longer alias the parameters"
ZERO_DEVICE = "ZeRO kept its construction-time default device"
STATE_SHAPE = "optimizer state does not match the FSDP shards"
STATE_RANKS = "optimizer state differs across ranks"
DIVERGED = "replicated parameters disagree across ranks"


def _where(site: Optional[Site]) -> Tuple[str, int]:
    return (site.path, site.line) if site is not None else ("<unknown>", 0)


def _line(site: Optional[Site]) -> str:
    return f"line {site.line}" if site is not None else "an unknown line"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _finding(code: str, site: Optional[Site], message: str, outcome: str, related: Sequence[RuntimeRelated] = (),
             step: Optional[int] = None, severity: Optional[str] = None) -> RuntimeFinding:
    path, line = _where(site)
    return RuntimeFinding(
        code=code,
        severity=severity or RULES[code][1],
        message=message,
        path=path,
        line=line,
        related=list(related),
        step=step,
        outcome=outcome,
    )


def related_events(events: Sequence[PlacementEvent]) -> List[RuntimeRelated]:
    """One related line per call site: a call in a loop (`fully_shard(block)` for each block) is
    counted over all its runs."""
    out = []
    merged: List[PlacementEvent] = []
    for event in events:
        same = next((m for m in merged if (m.op, m.site, bool(m.replaced)) == (event.op, event.site, bool(event.replaced))
                     and m.change == event.change), None)
        if same is None:
            merged.append(dataclasses.replace(event))
        else:
            same.replaced += event.replaced
            same.converted += event.converted
    for event in merged:
        if event.site is None:
            continue
        if event.replaced:
            note = f"{event.op} replaced {_plural(event.replaced, 'parameter')} here"
        elif event.change:
            note = f"{event.op} changed {_plural(event.converted, 'parameter')} here ({event.change})"
        else:
            note = f"{event.op} here"
        out.append(RuntimeRelated(event.site.path, event.site.line, note))
    return out


def _related_load(record: OptimizerRecord) -> List[RuntimeRelated]:
    if record.loaded_at is None:
        return []
    return [RuntimeRelated(record.loaded_at.path, record.loaded_at.line, "optimizer state loaded here")]


def _ops(events: Sequence[PlacementEvent]) -> str:
    parts = []
    for event in events:
        text = f"{event.op} on {_line(event.site)}"
        if text not in parts:
            parts.append(text)
    return ", ".join(parts) if parts else "an operation the monitor did not see"


def stale_after_replacement(record: OptimizerRecord, n_held: int, replaced: Sequence[object], described: str,
                            events: Sequence[PlacementEvent]) -> RuntimeFinding:
    """DDP001 at the moment a wrapper or conversion replaced parameters an optimizer holds: all of its
    parameters replaced so far (`fully_shard` on each block, then on the model, replaces them in
    several calls; each finding counts them all, and the one that covers the most is kept)."""
    n_replaced = len(replaced)
    if n_replaced == n_held:
        which = f"holds {_plural(n_held, 'parameter')} ({described}), all of which"
        effect = "step() updates the old tensors, which get no gradients, so the model does not train"
    else:
        which = f"holds {_plural(n_held, 'parameter')}; {n_replaced} of them ({described})"
        effect = "step() updates those old tensors, which get no gradients, so that part of the model does not train"
    message = (
        f"{record.label} built here {which} {_ops(events)} replaced with new objects; {effect}. Build the "
        f"optimizer after {events[-1].op if events else 'the replacement'}."
    )
    finding = _finding("DDP001", record.site, message, STALE, related_events(events))
    finding.covers = n_replaced
    return finding


def no_gradients(record: OptimizerRecord, n_params: int, n_stale: int, events: Sequence[PlacementEvent],
                 step: int) -> RuntimeFinding:
    """DDP001 seen at a step: backward ran, the model's parameters got gradients, the optimizer's none."""
    cause = (
        f"{_ops(events)} replaced them" if events
        else "the model now trains other parameter objects (a copy, a reassignment or a replacement made "
             "outside the monitored calls)"
    )
    message = (
        f"after backward, none of the {_plural(n_params, 'parameter')} of the {record.label} built here has a "
        f"gradient while the model's parameters do; {n_stale} of them are no longer in the model: {cause}. "
        f"step() changes nothing the model uses. Build the optimizer from the parameters the model trains."
    )
    return _finding("DDP001", record.site, message, STALE, related_events(events), step)


def partial_coverage(record: OptimizerRecord, stale: str, n_stale: int, orphans: Sequence[str],
                     events: Sequence[PlacementEvent], step: int) -> RuntimeFinding:
    """DDP001 partial: some optimizer parameters left the model and new ones are optimized by nobody."""
    shown = ", ".join(orphans[:4]) + (f", ... {len(orphans) - 4} more" if len(orphans) > 4 else "")
    message = (
        f"the {record.label} built here holds {_plural(n_stale, 'parameter')} ({stale}) that the model no "
        f"longer has, and {_plural(len(orphans), 'model parameter')} with gradients ({shown}) belong to no "
        f"optimizer: that part of the model never trains (weight_norm, a replaced submodule, ...). Build the "
        f"optimizer after the model is complete."
    )
    return _finding("DDP001", record.site, message, STALE, related_events(events), step)


def meta_optimizer(record: OptimizerRecord, n_meta: int, events: Sequence[PlacementEvent],
                   step: Optional[int]) -> RuntimeFinding:
    message = (
        f"the {record.label} built here holds {_plural(n_meta, 'parameter')} on the meta device; "
        f"{_ops(events) if events else 'materialising the model (to_empty)'} gave the model real parameters "
        f"and the optimizer steps the empty meta ones, so the model does not train. Build the optimizer after "
        f"to_empty()."
    )
    return _finding("DDP001", record.site, message, STALE, related_events(events), step)


def state_before_conversion(record: OptimizerRecord, n_params: int, event: PlacementEvent) -> RuntimeFinding:
    """DDP002 at the conversion: the optimizer already had state for parameters that just changed."""
    origin = (
        f"loaded on {_line(record.loaded_at)}" if record.loaded_at is not None
        else "built in its constructor" if record.steps == 0 else f"after {_plural(record.steps, 'step')}"
    )
    message = (
        f"the {record.label} built here has state ({origin}) for {_plural(n_params, 'parameter')} that "
        f"{event.op} on {_line(event.site)} changed ({event.change}); the state stays where it was, so the "
        f"next step crashes (Adam family, device moves) or silently mixes precisions (Adagrad, SGD momentum). "
        f"Move or cast the model before building the optimizer, and load its state after."
    )
    return _finding("DDP002", record.site, message, STATE, related_events([event]) + _related_load(record))


def state_mismatch(record: OptimizerRecord, mismatches: Sequence[StateMismatch], events: Sequence[PlacementEvent],
                   step: int) -> RuntimeFinding:
    first = mismatches[0]
    n_params = len({id(m.param) for m in mismatches})
    fsdp_views = [e for e in events if e.orig_params]
    if first.kind == "shape" and fsdp_views:
        message = (
            f"the {record.label} built here keeps state '{first.key}' of shape {first.state_value} while its "
            f"parameter is now an FSDP shard of shape {first.param_value} ({_plural(n_params, 'parameter')}); "
            f"FullyShardedDataParallel(use_orig_params=True) on {_line(fsdp_views[0].site)} resharded "
            f"parameters that already had state, and step() crashes. Build the optimizer after wrapping."
        )
        return _finding("DDP103", record.site, message, STATE_SHAPE, related_events(events), step, severity=ERROR)
    message = (
        f"the {record.label} built here keeps state '{first.key}' on {first.state_value} while its parameter "
        f"is on {first.param_value} ({_plural(n_params, 'parameter')}, {first.kind} mismatch): the step "
        f"crashes or mixes precisions. Move or cast the model before building the optimizer."
    )
    return _finding("DDP002", record.site, message, STATE, related_events(events) + _related_load(record), step)


def convert_after_wrap(event: PlacementEvent, ddp: DDPRecord, n_params: int) -> RuntimeFinding:
    """DDP003, reported on the conversion like the static rule."""
    message = (
        f"{event.op} changed {_plural(n_params, 'parameter')} ({event.change}) of a model that "
        f"DistributedDataParallel wrapped on {_line(ddp.site)}: the conversion reset the gradient accumulators "
        f"that carry DDP's all-reduce hooks, so gradients are no longer averaged and ranks train apart. "
        f"Convert before wrapping."
    )
    related = [RuntimeRelated(ddp.site.path, ddp.site.line, "wrapped by DistributedDataParallel here")] if ddp.site else []
    return _finding("DDP003", event.site, message, DDP_HOOKS_LOST, related)


def discarded_wrapper(ddp: DDPRecord, step: int) -> RuntimeFinding:
    message = (
        "the DistributedDataParallel built here never ran forward: training calls the bare module, so "
        "gradients are never averaged and each rank trains its own model. Keep the wrapper and train through it."
    )
    return _finding("DDP004", ddp.site, message, DDP_UNUSED, (), step)


def zero_buckets_broken(record: OptimizerRecord, n_params: int, events: Sequence[PlacementEvent],
                        step: Optional[int]) -> RuntimeFinding:
    message = (
        f"ZeroRedundancyOptimizer(parameters_as_bucket_view=True) built here: {_ops(events)} gave "
        f"{_plural(n_params, 'parameter')} new storage outside ZeRO's buckets, so the buckets ZeRO broadcasts "
        f"after each step no longer reach the parameters and ranks train apart. Move or cast the model "
        f"before building the optimizer."
    )
    return _finding("DDP005", record.site, message, ZERO_BUCKETS, related_events(events), step)


def zero_default_device(record: OptimizerRecord, default: str, actual: str, backend: Optional[str],
                        events: Sequence[PlacementEvent], step: Optional[int]) -> RuntimeFinding:
    nccl = backend == "nccl"
    consequence = (
        "on NCCL, consolidate_state_dict() and Join then pass CPU tensors to collectives and fail"
        if nccl else "on NCCL, consolidate_state_dict() and Join would pass CPU tensors to collectives and fail"
    )
    message = (
        f"ZeroRedundancyOptimizer built here froze its default device {default}, but its parameters are now on "
        f"{actual}; {consequence}. Build it after moving the model."
    )
    return _finding("DDP102", record.site, message, ZERO_DEVICE, related_events(events), step,
                    severity=ERROR if nccl else WARNING)


def stepped_before_ddp(record: OptimizerRecord, ddp: DDPRecord) -> RuntimeFinding:
    message = (
        f"the {record.label} built here stepped {_plural(record.steps, 'time')} before DistributedDataParallel "
        f"wrapped its model on {_line(ddp.site)}: DDP broadcasts parameters, not optimizer state, so rank-local "
        f"state makes ranks train apart. Wrap before the first step."
    )
    related = [RuntimeRelated(ddp.site.path, ddp.site.line, "wrapped by DistributedDataParallel here")] if ddp.site else []
    return _finding("DDP104", record.site, message, STATE_RANKS, related)


def no_effect(record: OptimizerRecord, events: Sequence[PlacementEvent], checks: int, step: int) -> RuntimeFinding:
    code = "DDP005" if record.zero is not None and record.zero.bucket_view else "DDP001"
    message = (
        f"the {record.label} built here stepped with non-zero gradients and a positive learning rate at "
        f"{_plural(checks, 'checked step')} in a row, and none of its parameters changed"
        + (f" (after {_ops(events)})" if events else "") + "."
    )
    return _finding(code, record.site, message, STALE, related_events(events), step)


def divergence(code: str, site: Optional[Site], n_differ: int, n_total: int, step: int, outcome: str,
               related: Sequence[RuntimeRelated] = ()) -> RuntimeFinding:
    message = (
        f"replicated parameters disagree across ranks after step {step}: {n_differ} of {n_total} differ"
        + ("" if code != "DDP000" else "; no recorded conversion, unused wrapper or ZeRO change explains it")
        + "."
    )
    severity = ERROR  # observed divergence is wrong training whatever the static severity
    return _finding(code, site, message, outcome, related, step, severity=severity)
