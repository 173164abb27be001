"""The service's rewrites of a query, as named rules (issue 47).

Between the model's query and the rows the user sees, the service rewrites a query without
the model: before it runs, when the checker refuses it, and (none yet) when its result is
empty. Each rewrite is a named rule (`registry.py`: its phase, its tier, what it reads, why
it exists); each phase runs one explicit, ordered tuple of them (`registry.BEFORE_RUN`,
`ON_REFUSAL`, `ON_EMPTY`) through one driver (`driver.py`), and every rule that fires is
recorded as a `Change(rule, before, after, reason)` (`change.py`). A setting switches rules
off by name (`DATAWELL_QUERY_RULES_DISABLED`; docs/query-rewrites.md lists them all).

This module imports nothing: tools/shape.py, mend.py and literals.py, whose rule bodies the
registry names, import `change.py` themselves."""
