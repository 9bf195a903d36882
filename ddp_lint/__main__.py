"""`python -m ddp_lint` is the `ddp-lint` command."""
import sys

from .cli import main

sys.exit(main())
