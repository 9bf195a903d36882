"""The codemod behind `ddp-lint --fix`: `planner` (what to move, or why not), `safety` (what a
statement in between may read or change), `apply` (the moves, pass after pass, until stable),
`writer` (atomic writes). The engine asks the planner for a plan; only `apply` reads the engine, so
this package imports none of its modules on its own (that would make engine -> fixer -> engine)."""
