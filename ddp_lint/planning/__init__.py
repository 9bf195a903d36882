"""Fix planning, below the engine: for a holder's story, the statement move that puts the optimizer (and
what is built on it) after the placement (`planner`), what a statement in between may read or change
(`safety`, `statements`), or a one-line reason why not. The engine attaches a plan to each diagnostic;
`fixer/` applies the plans and writes the files."""
