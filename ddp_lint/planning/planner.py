"""Turns a holder finding into a statement move inside one block, or a one-line reason why not."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .. import catalog as cat
from ..analysis.blocks import suites
from ..analysis.events import PlacementEvent
from ..analysis.names import dotted_name
from ..analysis.stories import HolderStory
from . import safety
from .statements import key_of, reads_and_binds

# Statements built on the optimizer that move with it (DESIGN §2): schedulers, EMA, scalers, state loads.
_DEPENDENT_CALL_WORDS = cat.OPTIMIZER_DEPENDENT_CALL_WORDS
_DEPENDENT_METHODS = cat.OPTIMIZER_DEPENDENT_METHODS


@dataclass
class FixPlan:
    """Move `moved` (statements of `block_owner`'s body, in order) to just after `anchor`."""

    block_owner: cst.CSTNode  # cst.Module or cst.IndentedBlock
    moved: Tuple[cst.BaseStatement, ...]
    anchor: cst.BaseStatement
    safe: bool
    description: str
    retarget: Optional[Tuple[str, str]] = None  # (old name, new name) inside the moved holder statement
    holder_statement: Optional[cst.BaseStatement] = None
    unsafe_reason: str = ""  # why the fix is not safe (the first reason found); empty when safe


@dataclass
class Refusal:
    reason: str


def plan_fix(story: HolderStory, root: cst.Module, line_of: Callable[[cst.CSTNode], int],
             followed: Optional[FrozenSet[str]] = None) -> "FixPlan | Refusal":
    """`followed`: the placement kinds the selected rules read (None: all). A placement that keeps
    the parameters and only a canonical-order rule reads (`torch.compile`, a memory-format change)
    is not one the optimizer must follow unless that rule is selected: it is crossed where it lies
    between, never a reason to move the optimizer into another method or block."""
    holder = story.holder
    # A model taken back to the CPU is no placement to build the optimizer after (it would train there).
    placements = [step.placement for step in story.steps if step.placement.kind != cat.HOME]
    if story.steps and not placements:
        return Refusal("the model goes back to the CPU: an optimizer built after that would train it there")
    targets = [p for p in placements if _must_follow(p, followed)] or placements
    if holder.arrives:
        return Refusal(f"the callers of `{holder.arrives}` build the optimizer; place the model before they build "
                       f"it, or build the optimizer here after the placement")
    if holder.copies:
        # A holder that copies the model is built from the module, not the wrapper (a wrap does not touch
        # the copy): it moves after the last real placement, not after the wrap, which would hand it the wrapper.
        placements = [p for p in placements if p.kind not in cat.CANONICAL_KINDS] or placements
        targets = placements
    if not placements:
        return Refusal("nothing to move after")
    target = max(targets, key=lambda p: p.site.order)
    if target.site.handler is not None:
        return Refusal(f"the placement runs in `{target.site.handler}`, a handler that runs while its object "
                       f"runs and uses the optimizer: build the optimizer in a handler registered after it")
    if target.operation == cat.TENSOR_COPY:
        return Refusal(
            "an optimizer moved after the copy would hold a tensor that is not a leaf; create the tensor on "
            "its device instead (`torch.zeros(..., device=device, requires_grad=True)`)"
        )
    # The message names the first placement; the optimizer must follow the last one, which a refusal names.
    placement = "the placement" if target is placements[0] else "the last placement it must follow"
    if holder.site.via is not None:
        return Refusal(f"the optimizer is built inside `{holder.site.via}`: move its construction after the "
                       f"placement there, or the placement before that call, by hand")
    h_chain, p_chain = holder.site.chain, target.site.chain
    if not h_chain or not isinstance(h_chain[-1], cst.SimpleStatementLine):
        return Refusal("the optimizer is built inside a compound statement's header")
    if target.site.via is not None and len(p_chain) == 0:
        return Refusal("the placement happens in another function")
    if h_chain[0] is not p_chain[0] and isinstance(h_chain[0], cst.FunctionDef) and isinstance(p_chain[0], cst.FunctionDef):
        return Refusal(
            f"{placement} is in another method (`{p_chain[0].name.value}()`, line {line_of(target.site.node)}); "
            f"move the optimizer there by hand"
        )
    depth = len(h_chain) - 1
    if p_chain[:depth] != h_chain[:depth] or len(p_chain) <= depth:
        return Refusal(
            f"{placement}, on line {line_of(target.site.node)}, is in a different block than the optimizer "
            f"(another function, branch or loop body)"
        )
    anchor = p_chain[depth]
    if anchor is h_chain[-1]:
        return Refusal("the optimizer and the placement are in the same statement")
    if any(isinstance(s, (cst.For, cst.While)) for s in p_chain[depth:-1]) or isinstance(anchor, (cst.For, cst.While)):
        return Refusal(f"{placement}, on line {line_of(target.site.node)}, is inside a loop body")
    owner, body = _block_of(root, h_chain)
    if owner is None:
        return Refusal("could not locate the block that holds the optimizer")
    index_h = _index(body, h_chain[-1])
    index_a = _index(body, anchor)
    if index_h is None or index_a is None or index_a <= index_h:
        return Refusal("the placement does not come after the optimizer in the same block")

    holder_statement = h_chain[-1]
    holder_keys = {holder.var} if holder.var else set()
    model_roots = {key_of(m.text) for m in holder.models}
    placement_statements = _placement_statements(placements, body, index_h, index_a)
    between = list(body[index_h + 1 : index_a + 1])
    moved: List[cst.BaseStatement] = [holder_statement]
    holder_reads, moved_binds = reads_and_binds(holder_statement)
    moving_keys = set(holder_keys) | moved_binds
    # Reads of the moved statements that come before each point: a later rebinding changes what they see.
    reads_so_far = set(holder_reads)
    exact_so_far = safety.dotted_reads([holder_statement])
    checker = _checker(root, h_chain, line_of)
    filters = safety.filters_requires_grad([holder_statement])
    unsafe: List[str] = []
    for statement in between[:-1]:
        reads, binds = reads_and_binds(statement)
        if reads & moving_keys:
            if statement in placement_statements:
                return Refusal(f"line {line_of(statement)} moves the model and also reads the optimizer")
            if not _is_dependent(statement, moving_keys):
                return Refusal(
                    f"line {line_of(statement)} reads `{sorted(reads & moving_keys)[0]}` and cannot move with it"
                )
            moved.append(statement)
            reads_so_far |= reads
            exact_so_far |= safety.dotted_reads([statement])
            moving_keys |= binds
            continue
        refusal = _rebinding_refusal(statement, binds & reads_so_far - holder_keys, model_roots, placements,
                                     placement_statements, holder_statement, line_of)
        if refusal is not None:
            return refusal
        found = checker.check(statement, moving_keys, reads_so_far, exact_so_far, model_roots, filters,
                              statement in placement_statements)
        if found is not None and found.refused:
            return Refusal(found.reason)
        if found is not None:
            unsafe.append(found.reason)
    anchor_reads, anchor_binds = reads_and_binds(anchor)
    if anchor_reads & moving_keys:
        return Refusal(f"line {line_of(anchor)} reads `{sorted(anchor_reads & moving_keys)[0]}` together with the placement")
    refusal = _rebinding_refusal(anchor, anchor_binds & reads_so_far - holder_keys, model_roots, placements,
                                 placement_statements | {anchor}, holder_statement, line_of)
    if refusal is not None:
        return refusal
    found = checker.check(anchor, moving_keys, reads_so_far, exact_so_far, model_roots, filters, True)
    if found is not None and found.refused:
        return Refusal(found.reason)
    if found is not None:
        unsafe.append(found.reason)
    retarget = None
    new_name = _new_wrapper_name(target, anchor, model_roots)
    if target.kind == cat.REPLACE:
        stale = _param_variables(holder_statement, story)
        if stale:
            return Refusal(
                f"the optimizer takes `{stale}`, built before line {line_of(target.site.node)} from parameters it "
                f"replaces; rebuild that list after the replacement"
            )
        if new_name is not None:
            if len(model_roots) != 1 or "." in next(iter(model_roots)):
                return Refusal("the wrapper gets a new name and the optimizer's model is not a plain name to retarget")
            retarget = (next(iter(model_roots)), new_name)
    unsafe.extend(_holder_reasons(story, holder_statement, moved, between, anchor, anchor_binds, placement_statements,
                                  model_roots, holder_keys, target, retarget, line_of))
    for index, statement in enumerate(body[index_h + 1 : index_a + 1], start=index_h + 1):
        if statement is anchor or statement in placement_statements:
            added = _maybe_added_attribute(statement, model_roots, body[:index])
            if added is not None:
                unsafe.append(f"line {line_of(statement)} sets `{added}`, which nothing before it reads: if the model "
                              f"had no such attribute, this adds parameters, and the optimizer moved after it would "
                              f"hold them too")
    after = line_of(anchor)
    what = "optimizer" if len(moved) == 1 else f"optimizer and {len(moved) - 1} dependent statement(s)"
    description = f"move the {what} after line {after}"
    if retarget:
        description += f", building it on `{retarget[1]}`"
    return FixPlan(owner, tuple(moved), anchor, not unsafe, description, retarget, holder_statement,
                   unsafe[0] if unsafe else "")


def _holder_reasons(story, holder_statement, moved, between, anchor, anchor_binds, placement_statements, model_roots,
                    holder_keys, target, retarget, line_of) -> List[str]:
    """Why moving this holder may change the program, apart from what lies between: what the holder
    is, whom it calls, which state moves with it, and what the code's comments say."""
    holder = story.holder
    reasons: List[str] = []
    rebinding = None
    for statement in [s for s in between if s in placement_statements] + [anchor]:
        bound = _rebound_to_new_object(statement, model_roots)
        if bound:
            rebinding = bound
    if retarget is not None:
        rebinding = retarget[0]
    call = holder.site.node if isinstance(holder.site.node, cst.Call) else None
    hook = safety.hook_receives_wrapper(call, model_roots, rebinding, line_of(anchor))
    if hook is not None:
        reasons.append(hook.reason)
    elif holder.kind == cat.FACTORY:
        called = holder.label if holder.label.endswith(")") else f"{holder.label}()"  # a cataloged factory's name
        reasons.append(f"the optimizer comes from `{called}`, whose body ddp-lint does not follow: it may read "
                       f"something the statements moved across change")
    if holder.var is None:
        reasons.append("the optimizer is not bound to a name, so ddp-lint cannot show nothing in between uses it")
    elif "." in holder.var:
        reasons.append(f"`{holder.var}` is an attribute: code outside this function (another method, a callback) "
                       f"may read it before the move")
    state = safety.sharded_state_load(moved, holder_keys, [step.placement.operation for step in story.steps])
    if state is not None:
        reasons.append(state)
    comment = safety.order_comment([holder_statement] + list(between), line_of)
    if comment is not None:
        reasons.append(comment.reason)
    return reasons


_DEFINITIONS: List[Tuple[cst.Module, safety.Definitions]] = []


def _checker(root: cst.Module, chain, line_of) -> safety.Between:
    """One module's definitions serve every finding planned in it."""
    if not _DEFINITIONS or _DEFINITIONS[0][0] is not root:
        _DEFINITIONS[:] = [(root, safety.Definitions(root))]
    definitions = _DEFINITIONS[0][1]
    return safety.Between(definitions, definitions.scope_of(chain), definitions.imported, line_of)


def _rebinding_refusal(statement, clash, model_roots, placements, placement_statements, holder_statement, line_of):
    if not clash:
        return None
    if statement in placement_statements and clash <= model_roots:
        code = cst.Module(body=[]).code_for_node(holder_statement)
        if cat.NAMED_PARAMETERS in code and _is_sync_wrap(placements, statement):
            return Refusal(
                f"parameter groups use named_parameters() and line {line_of(statement)} wraps the model, which "
                f"renames its parameters (`module.` prefix); rebuild the groups by hand"
            )
        return None  # same-name rebinding of the model by its own placement: nothing to rename
    return Refusal(f"a moved statement reads `{sorted(clash)[0]}`, which line {line_of(statement)} rebinds")


def _must_follow(placement: PlacementEvent, followed: Optional[FrozenSet[str]]) -> bool:
    """Whether the optimizer must end up after this placement: any that changes the parameters, and a
    canonical-order one (a wrap, a layout change) when a selected rule reads it (DDP201, DDP202, or
    the sync-wrapper rules for DDP itself)."""
    if followed is None or placement.kind not in cat.CANONICAL_KINDS:
        return True
    return cat.reads_placement(followed, placement)


def _block_of(root: cst.Module, chain: Sequence[cst.CSTNode]):
    if len(chain) == 1:
        return root, list(root.body)
    parent = chain[-2]
    for suite in suites(parent):
        if isinstance(suite, cst.IndentedBlock) and any(s is chain[-1] for s in suite.body):
            return suite, list(suite.body)
    return None, []


def _index(body: Sequence[cst.CSTNode], node: cst.CSTNode) -> Optional[int]:
    return next((i for i, s in enumerate(body) if s is node), None)


def _placement_statements(placements: List[PlacementEvent], body, start: int, end: int) -> Set[cst.CSTNode]:
    found = set()
    for placement in placements:
        for statement in placement.site.chain:
            if any(statement is s for s in body[start + 1 : end + 1]):
                found.add(statement)
    return found


def _is_dependent(statement: cst.BaseStatement, keys: Set[str]) -> bool:
    """A scheduler/EMA/scaler built on the optimizer, or a state load on it (possibly under an `if`)."""
    if isinstance(statement, cst.If):
        bodies = [statement.body] + ([statement.orelse.body] if isinstance(statement.orelse, cst.Else) else [])
        inner = [s for b in bodies if isinstance(b, cst.IndentedBlock) for s in b.body]
        return bool(inner) and all(_is_dependent(s, keys) for s in inner)
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        value = small.value if isinstance(small, (cst.Assign, cst.Expr, cst.AnnAssign)) else None
        if not isinstance(value, cst.Call):
            return False
        callee = dotted_name(value.func) or ""
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in _DEPENDENT_METHODS:
            receiver = dotted_name(value.func.value)
            if receiver is not None and key_of(receiver) in keys:
                continue
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and any(word in callee for word in _DEPENDENT_CALL_WORDS):
            continue
        return False
    return True


def _new_wrapper_name(target: PlacementEvent, anchor: cst.CSTNode, model_roots: Set[str]) -> Optional[str]:
    statement = target.site.chain[-1]
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            name = dotted_name(small.targets[0].target)
            if name is not None and name not in model_roots and "." not in name:
                return name
    return None


def _is_sync_wrap(placements: List[PlacementEvent], statement: cst.CSTNode) -> bool:
    return any(p.sync_wrapper and any(s is statement for s in p.site.chain) for p in placements)


def _param_variables(holder_statement: cst.CSTNode, story: HolderStory) -> Optional[str]:
    """A variable the holder reads that carries parameters collected earlier (stale after a replacement)."""
    reads, _ = reads_and_binds(holder_statement)
    code = cst.Module(body=[]).code_for_node(holder_statement)
    if ".parameters(" in code or ".named_parameters(" in code:
        return None
    models = {key_of(m.text) for m in story.holder.models}
    candidates = sorted(reads - models - {story.holder.var or ""})
    for name in candidates:
        if name and name[0].islower() and ("param" in name or "group" in name):
            return name
    return None


def _rebound_to_new_object(statement: cst.CSTNode, model_roots: Set[str]) -> Optional[str]:
    """A model name the statement points at another object (`model = DDP(model)`); a module's own
    `.to()`/`.cuda()`/`.half()` return the module itself, so `model = model.cuda()` is not one."""
    if not isinstance(statement, cst.SimpleStatementLine):
        bound = reads_and_binds(statement)[1] & model_roots
        return sorted(bound)[0] if bound else None
    for small in statement.body:
        if not isinstance(small, (cst.Assign, cst.AnnAssign)) or small.value is None:
            continue
        bound = reads_and_binds(small)[1] & model_roots
        if not bound:
            continue
        value = small.value
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in cat.METHOD_PLACEMENTS:
            value = value.func.value
        if dotted_name(value) in bound:
            continue  # the same module, placed
        return sorted(bound)[0]
    return None


def _maybe_added_attribute(statement: cst.CSTNode, model_roots: Set[str], earlier: Sequence[cst.CSTNode]) -> Optional[str]:
    """`model.fc = nn.Linear(...)` replaces the parameters of an existing `fc` (the bug the fix mends)
    only if `fc` existed: shown by a read of it before or in the value (`model.fc.in_features`).
    Otherwise it may add a module, and moving the optimizer after it changes what it trains."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, value = small.targets[0].target, small.value
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            target, value = small.target, small.value
        else:
            continue
        dotted = dotted_name(target) if isinstance(target, cst.Attribute) else None
        if dotted is None or key_of(dotted) not in model_roots or key_of(dotted) == dotted:
            continue
        reads = safety.dotted_reads(list(earlier) + [value])
        if not any(r == dotted or r.startswith(dotted + ".") for r in reads):
            return dotted
    return None
