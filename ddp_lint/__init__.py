"""ddp-lint: find optimizers built before their model is moved, cast, replaced or wrapped."""

__version__ = "0.1.0"
