"""Where a run's files and settings come from, the same for the CLI, the flake8 plugin and `verify`.

`globs` is the one pattern engine (`.gitignore` semantics) that exclusion, `.gitignore` files and
per-file ignores share; `configs` finds and reads the configuration that governs each folder;
`files` turns the paths a user gives into the files to check.
"""
