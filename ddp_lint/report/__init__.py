"""Output formats: one module each (text, json, sarif, github, gitlab, junit, pylint), all fed the same
sorted findings. `FORMATS` is the one list of them, with what each is for (`--help` prints it)."""

FORMATS = {
    "full": "each finding, its explanation, related lines and fix (the default)",
    "concise": "one line each",
    "grouped": "one line each, under its file's name (ruff's grouped)",
    "json": "findings, errors and a summary",
    "sarif": "SARIF 2.1.0",
    "github": "GitHub Actions annotations",
    "gitlab": "a GitLab Code Quality report",
    "junit": "JUnit XML: a test case per file, a failure per finding",
    "pylint": "path:line: [CODE] summary",
}
ALIASES = {"text": "full"}
# The formats that print the findings as text, with the summary and `--show-fixes` below them.
TEXT_FORMATS = ("full", "concise", "grouped")
