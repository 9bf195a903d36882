"""Paths through one scope's statements: branches, loops, `try`, `match`, and where paths end.

Each arm of an `if`, `try`, `match` or loop starts from a copy of the names bound before it, and where
the arms meet a name holds the *set* of objects it may hold on any path that gets there (may-alias).
`return`, `raise`, `break` and `continue` end their path: the events after a branch record which arms had
ended (`Site.dead`), and the names bound in an ended arm do not reach the merge. Generic Python: what an
expression or a call does is asked of the layers above (`_eval`, `_bind_target`, `_enter_manager`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from .context import parameter_of, truth_of
from .events import Guard, TRY_BODY
from .blocks import expression_children, suites
from .names import dotted_name, dotted_names, target_elements
from .heap import Arm, Env, element_of, join_bindings


@dataclass
class Loop:
    """What `break` and `continue` leave behind inside one loop: their environments and ended arms."""

    exits: List[Env] = field(default_factory=list)
    ended: set = field(default_factory=set)


def _merge(envs: Sequence[Env], written: Optional[Iterable[str]] = None) -> Env:
    """The names after paths meet: each holds what it holds on any path (a name bound on only some
    paths keeps what those paths give it). `written`: the only names the paths may have rebound."""
    if len(envs) == 1:
        return envs[0]
    merged = dict(envs[0])
    if written is not None:
        differing = {key for key in written if any(env.get(key) is not merged.get(key) for env in envs)}
    else:
        differing = set()
        for env in envs[1:]:
            for key, binding in env.items():
                if merged.get(key) is not binding:
                    differing.add(key)
            differing.update(key for key in merged if key not in env)
    for key in differing:
        found = [env[key] for env in envs if key in env]
        merged[key] = join_bindings(found) if len(found) > 1 else found[0]
    return merged


class PathWalker:
    """The statement walk of `ScopeWalker` (analysis/walker.py), along every path."""

    def walk_body(self, body: Sequence[cst.BaseStatement], root: Tuple[cst.CSTNode, ...] = ()) -> None:
        saved = self._chain
        self._chain = root
        self._alive, self._dead = True, frozenset()
        self._walk_block(body)
        self._chain = saved

    def _walk_block(self, body: Sequence[cst.BaseStatement]) -> None:
        for statement in body:
            if not self._alive:
                return  # unreachable: the path ended above
            self._walk_statement(statement)

    def _enter(self, statement: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
        saved = self._chain
        self._chain = saved + (statement,)
        return saved

    def _walk_statement(self, statement: cst.BaseStatement) -> None:
        saved = self._enter(statement)
        try:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if self._alive:
                        self._walk_small(small)
            elif isinstance(statement, cst.If):
                self._walk_if(statement)
            elif isinstance(statement, (cst.For, cst.While)):
                self._walk_loop(statement)
            elif isinstance(statement, cst.With):
                syncing, outer = False, self._manager_context  # what the managers set up lasts for the body
                for item in statement.items:
                    value = self._eval(item.item)
                    if item.asname is not None:
                        self._bind_target(item.asname.name, value)
                    syncing = self._enter_manager(item.item) or syncing
                self._synced += syncing
                try:
                    self._walk_suite(statement.body)
                finally:
                    self._synced -= syncing
                    self._manager_context = outer
            elif isinstance(statement, cst.Try):
                self._walk_try(statement)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                # their own scopes; the name now refers to something new
                self._note_definition(statement)
            elif isinstance(statement, cst.Match):
                self._walk_match(statement)
            else:
                body = getattr(statement, "body", None)
                if isinstance(body, cst.BaseSuite):
                    self._walk_suite(body)
        finally:
            self._chain = saved

    def _walk_arms(self, node: cst.CSTNode, arms: Sequence[Tuple[Tuple[Guard, ...], object]], start: Env,
                   fall_through: bool) -> None:
        """Walk each arm from `start`; afterwards the names hold what they may hold on every path that
        got through an arm (or past them all, with `fall_through`)."""
        outs: List[Env] = [start] if fall_through else []
        written: set = set()
        for arm, (guards, walk) in enumerate(arms):
            self.env = dict(start)
            self._alive = True
            self._ended_by_loop_exit = False
            self._writes.append(set())
            try:
                self._with_branch(node, arm, guards, walk)
            finally:
                written |= self._writes.pop()
            if self._alive:
                outs.append(self.env)
            else:
                self._end_arm((id(node), arm))
        if self._writes:
            self._writes[-1].update(written)
        self._alive = bool(outs)
        self._ended_by_loop_exit = False
        self.env = _merge(outs, written) if outs else start
        if outs and not fall_through:
            self._note_rebuilt_everywhere(node, start)

    def _end_arm(self, arm: Arm) -> None:
        self._dead = self._dead | {arm}
        if self._ended_by_loop_exit and self._loops:
            self._loops[-1].ended.add(arm)

    def _walk_if(self, statement: cst.If) -> None:
        self.tested.update(dotted_names(statement.test))
        decided = truth_of(statement.test, {k: v for k, v in self.context.items()
                                            if parameter_of(k) not in self._rebound}) if self.context else None
        if decided is not None:
            # a summary for a call that decides this test: only the arm that runs, as straight code
            self._eval_test(statement.test)
            if decided:
                self._walk_suite(statement.body)
            elif isinstance(statement.orelse, cst.If):
                self._walk_if(statement.orelse)
            elif isinstance(statement.orelse, cst.Else):
                self._walk_suite(statement.orelse.body)
            return
        self._eval_test(statement.test)
        if self._arrivals and statement.orelse is None and _ends_in_raise(statement.body):
            self._note_refusal(statement.test)
        test = statement.test
        arms: List[Tuple[Tuple[Guard, ...], object]] = [
            ((Guard(test, True, self._facts(test, True)),), lambda: self._walk_suite(statement.body))
        ]
        orelse = statement.orelse
        otherwise = (Guard(test, False, self._facts(test, False)),)
        if isinstance(orelse, cst.If):
            # An `elif` belongs to the outer `if` statement: it adds no statement to the chain.
            arms.append((otherwise, lambda: self._walk_if(orelse)))
        elif isinstance(orelse, cst.Else):
            arms.append((otherwise, lambda: self._walk_suite(orelse.body)))
        self._walk_arms(statement, arms, self.env, fall_through=orelse is None)

    def _facts(self, test: cst.BaseExpression, truth: bool, depth: int = 0) -> FrozenSet[Tuple[str, bool]]:
        """What `test` being `truth` says of names: `a and not b` true gives a and not b; `a or b` false
        gives not a and not b; a computed flag stands for its definition."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._facts(test.expression, not truth, depth)
        if isinstance(test, cst.BooleanOperation):
            splits = isinstance(test.operator, cst.And) if truth else isinstance(test.operator, cst.Or)
            if not splits:
                return frozenset()
            return self._facts(test.left, truth, depth) | self._facts(test.right, truth, depth)
        name = dotted_name(test)
        if name is None:
            return frozenset()
        definition = self._definitions.get(name)
        if definition is not None and depth < 3:
            return self._facts(definition, truth, depth + 1)
        return frozenset({(name, truth)})

    def _eval_test(self, test: cst.BaseExpression) -> None:
        """A condition: a call in it answers a question (`if self._swappable_optimizer(i):`), it does
        not build an optimizer, whatever its name says."""
        self._in_test += 1
        try:
            self._eval(test)
        finally:
            self._in_test -= 1

    def _walk_match(self, statement: cst.Match) -> None:
        self._eval(statement.subject)
        arms = [((), lambda c=case: self._walk_suite(c.body)) for case in statement.cases]
        exhaustive = any(
            isinstance(case.pattern, cst.MatchAs) and case.pattern.pattern is None and case.guard is None
            for case in statement.cases
        )
        self._walk_arms(statement, arms, self.env, fall_through=not exhaustive)

    def _walk_try(self, statement: cst.Try) -> None:
        before = self.env
        self.env = dict(before)
        self._with_branch(statement, TRY_BODY, (), lambda: self._walk_suite(statement.body))
        body_alive, after_body = self._alive, self.env
        if statement.orelse is not None and body_alive:
            self._walk_suite(statement.orelse.body)
        outs = [(self._alive, self.env)]
        # A handler may start anywhere in the body: from what was bound before it or at its end.
        start = _merge([before, after_body]) if body_alive else before
        for arm, handler in enumerate(statement.handlers, start=1):
            self.env = dict(start)
            self._alive = True
            self._with_branch(statement, arm, (), lambda h=handler: self._walk_suite(h.body))
            if not self._alive:
                self._end_arm((id(statement), arm))
            outs.append((self._alive, self.env))
        live = [env for alive, env in outs if alive]
        self._alive = bool(live)
        self.env = _merge(live) if live else start
        if statement.finalbody is not None:
            alive, self._alive = self._alive, True
            self._walk_suite(statement.finalbody.body)
            self._alive = alive and self._alive

    def _walk_loop(self, statement) -> None:
        """Loops run to a fixed point of one extra pass: the body is first walked silently, so that on
        the recorded pass a name holds what the previous iteration may have left in it."""
        before = self.env
        self.env = dict(before)
        # The outermost loop's extra pass covers the inner ones; it is needed only where the body rebinds
        # a name bound before the loop (a name first bound inside cannot reach the head from before).
        if self._silent == 0 and not self._loops and not _rebound_in(statement).isdisjoint(before):
            self._silent += 1
            try:
                self._loop_pass(statement)
                head = _merge([before] + self._loop_exits(before))
            finally:
                self._silent -= 1
            self.env = dict(head)
        else:
            head = before
        alive_before = self._alive
        self._with_branch(statement, 0, (), lambda: self._loop_pass(statement))
        returned = not self._alive and not self._loops[-1].exits  # every pass through the body returns
        self.env = _merge([head] + self._loop_exits(head))
        if returned:
            self._dead = self._dead | {(id(statement), 0)}  # nothing after the loop follows the body
        self._alive = alive_before
        if statement.orelse is not None:
            self._walk_suite(statement.orelse.body)

    def _loop_pass(self, statement) -> None:
        self._loops.append(Loop())
        self._alive = True
        if isinstance(statement, cst.For):
            source = self._eval(statement.iter)
            self._bind_target(statement.target, element_of(source))
        else:
            self._eval_test(statement.test)
        self._walk_suite(statement.body)

    def _loop_exits(self, head: Env) -> List[Env]:
        loop = self._loops.pop()
        self._dead = self._dead - loop.ended  # after the loop, the path of a `break` goes on
        exits = list(loop.exits)
        if self._alive:
            exits.append(self.env)
        return exits

    def _with_branch(self, node: cst.CSTNode, arm: int, guards: Tuple[Guard, ...], walk) -> None:
        saved = (self._branches, self._guards)
        self._branches = self._branches + ((id(node), arm),)
        self._guards = self._guards + tuple(guards)
        try:
            walk()
        finally:
            self._branches, self._guards = saved

    def _walk_suite(self, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._walk_block(suite.body)
        elif isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                if self._alive:
                    self._walk_small(small)

    def _walk_small(self, small: cst.BaseSmallStatement) -> None:
        self._current_node = small
        if isinstance(small, cst.Assign):
            value = self._eval(small.value)
            for target in small.targets:
                self._bind_target(target.target, value, small.value)
            self.imports.note_module_import(small)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self._bind_target(small.target, self._eval(small.value), small.value)
        elif isinstance(small, cst.AugAssign):
            self._bind_augmented(small.target, self._eval(small.value), small.value)
        elif isinstance(small, cst.Expr):
            value = self._eval(small.value)
            self._check_discarded(small.value, value)
        elif isinstance(small, cst.Return):
            if small.value is not None:
                value = self._eval(small.value)
                if not self._silent:
                    self.returns.append(value)
                    self.returned_new.append(self._makes_new_module(small.value, value))
                    self.returned_fresh.append(self._made_by_class(small.value, value))
                self._note_handed_back(small.value)
            self._alive = False
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            self.imports.add(small)
        elif isinstance(small, (cst.Raise, cst.Assert, cst.Del)):
            for child in expression_children(small):
                self._eval(child)
            if isinstance(small, cst.Raise):
                self._alive = False
        elif isinstance(small, (cst.Break, cst.Continue)) and self._loops:
            self._loops[-1].exits.append(self.env)
            self._alive = False
            self._ended_by_loop_exit = True


def _rebound_in(loop) -> FrozenSet[str]:
    """The names (and `self.x`) a loop's own statements bind, nested blocks included (statements only:
    far cheaper than walking the body)."""
    keys: set = set()
    collect_bound(loop.body, keys)
    return frozenset(keys)


def collect_bound(suite: cst.BaseSuite, keys: set) -> None:
    statements = suite.body if isinstance(suite, cst.IndentedBlock) else (suite,)
    for statement in statements:
        smalls = statement.body if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
        for small in smalls:
            targets = ()
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                targets = [small.target]
            for target in targets:
                keys.update(bound_keys(target))
        if isinstance(statement, cst.For):
            keys.update(bound_keys(statement.target))
        if isinstance(statement, cst.With):
            keys.update(key for item in statement.items if item.asname is not None for key in bound_keys(item.asname.name))
        if isinstance(statement, cst.BaseCompoundStatement):
            for inner in suites(statement):
                collect_bound(inner, keys)


def bound_keys(target: cst.BaseExpression) -> Iterator[str]:
    """The names (and `self.x`) an assignment, loop or comprehension target binds."""
    for element in target_elements(target):
        dotted = dotted_name(element)
        if dotted is not None and (dotted.count(".") == 0 or (dotted.startswith("self.") and dotted.count(".") == 1)):
            yield dotted


def _ends_in_raise(body: cst.BaseSuite) -> bool:
    last = body.body[-1] if body.body else None
    if isinstance(body, cst.SimpleStatementSuite):
        return isinstance(last, cst.Raise)
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise)


