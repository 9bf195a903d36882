"""The codemod behind `ddp-lint --fix`: `apply` (the planned moves, pass after pass, until stable) and
`writer` (atomic writes). The plans come from `planning/`, below the engine, through the diagnostics."""
