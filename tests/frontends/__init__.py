"""Tests of the front ends (flake8, pre-commit, output formats, notebooks) against the real tools."""
