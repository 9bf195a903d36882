"""Developer commands, run from a checkout and never by users: `python -m ddp_lint.dev new-rule CODE NAME`
writes everything a new rule needs (see `new_rule.py`), as ruff's `scripts/add_rule.py` does.
"""
