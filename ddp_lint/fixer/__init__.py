"""The codemod behind `ddp-lint --fix`: plan statement moves, apply them until stable, write atomically."""
from .apply import FixResult, fix_source
from .planner import FixPlan, Refusal

__all__ = ["FixPlan", "FixResult", "Refusal", "fix_source"]
