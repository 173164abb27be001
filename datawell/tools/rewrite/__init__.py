"""The service's rewrites of a query, as named rules (issue 47).

Between the model's query and the rows the user sees, the service rewrites a query without
the model: before it runs, when the checker refuses it, and (none yet) when its result is
empty. Each rewrite is a named rule (`registry.py`: its phase, its tier, what it reads, why
it exists); each phase runs one explicit, ordered tuple of them (`registry.BEFORE_RUN`,
`ON_REFUSAL`, `ON_EMPTY`) through one driver (`driver.py`), and every rule that fires is
recorded as a `Change(rule, before, after, reason)` (`change.py`). A setting switches rules
off by name (`DATAWELL_QUERY_RULES_DISABLED`; docs/query-rewrites.md lists them all).

Each rule's body is a module of this package named after the rule (`drop_unasked_limit.py`),
in the style of sqlglot's optimizer: a function of the parsed query (or of its text) and of
what the rule declares it reads. `before_run.py` and `on_refusal.py` declare the rules, in
order; what several rules share is in `sql.py` (what a rule reads of a parsed query: the
datasets a SELECT reads, its columns), `joins.py` (keys and links between datasets) and
`lexicon.py` (what the question says). The two `values` rules' lookups stay in
tools/literals.py, which calls their bodies here. This module imports nothing."""
