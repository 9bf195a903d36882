"""Runtime companion of ddp-lint: run a training script with a monitor in every rank.

`ddp-lint run` proves static findings by execution; `ddp-lint verify` runs a script and its fixed
copy side by side. Nothing here imports torch at import time: the parent process only launches
and reports, and torch is imported inside the ranks (see `bootstrap`, `monitor`).
"""
