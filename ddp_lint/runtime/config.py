"""Settings shared by the launching parent and the monitored ranks, passed through one env variable."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import List, Mapping, Optional

CONFIG_ENV = "DDP_LINT_MONITOR"

# Steps 1..WARMUP_CHECKS are always checked: a stale optimizer is wrong from its first step, and
# catching it there costs a few checks, not a pass over the whole run.
WARMUP_CHECKS = 3
DEFAULT_CHECK_EVERY = 20


@dataclass
class MonitorConfig:
    out_dir: Optional[str] = None
    check_every: int = DEFAULT_CHECK_EVERY
    max_steps: Optional[int] = None
    trace: bool = False
    seed: Optional[int] = None
    backend: Optional[str] = None
    extra_sys_path: List[str] = field(default_factory=list)

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "MonitorConfig":
        raw = (os.environ if environ is None else environ).get(CONFIG_ENV)
        if not raw:
            return cls()
        data = json.loads(raw)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def is_check_step(self, step: int) -> bool:
        """Whether optimizer step number `step` (1-based) gets the full invariant checks."""
        return step <= WARMUP_CHECKS or (self.check_every > 0 and step % self.check_every == 0)

    def next_check_after(self, step: int) -> int:
        """The first scheduled check step after `step`."""
        if step < WARMUP_CHECKS:
            return step + 1
        if self.check_every <= 0:
            return 1 << 62
        return (step // self.check_every + 1) * self.check_every
