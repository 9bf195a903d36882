"""Project-wide analysis: imports resolved inside the checked tree, and summaries of other modules."""
