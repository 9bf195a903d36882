"""Output formats: one module each (text, json, sarif, github), all fed the same sorted findings."""
