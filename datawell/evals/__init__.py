"""Prompt evals: suites (YAML with a schema), fixture datasets, a runner that saves
predictions, scoring that re-runs from them, and reports. `datawell eval` drives them."""
