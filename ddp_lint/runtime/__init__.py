"""Runtime companion of ddp-lint: run a training script with a monitor in every rank.

`ddp-lint run` proves static findings by execution; `ddp-lint verify` runs a script and its
fixed copy side by side. Nothing here imports torch at import time: the parent process only
launches and reports, and torch is imported inside the ranks.

Modules, in the order a run passes through them:
  cli        the two command lines (`run_main`, `verify_main`)
  launcher   torchrun or a single process, the timeout, cleanup of the process tree
  bootstrap  each rank's entry point: installs the monitor, runs the script as `__main__`
  monitor    patches and hooks, when to check, findings as they happen
  registry   what the monitor remembers (optimizers, placement events, DDP wrappers)
  invariants the checks themselves, as plain functions
  diagnose   a broken invariant turned into a finding with its rule code and lines
  records    the per-rank JSON-lines files between ranks and parent
  report     merging ranks' records, text and JSON output
  verify     fixer + two runs + verdict
and beside them: config (settings passed to the ranks), callsite (the user's line behind a
call), patching (replacing torch attributes, also in modules imported later), fingerprint
(parameter sums and hashes), findings (codes, JSON form, deduplication).
"""
