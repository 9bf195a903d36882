"""Front ends that run the engine inside other tools: the flake8 plugin (pre-commit uses the CLI itself)."""
