"""`drop_unasked_limit`, a before-run rule of the query and the question (moved out of
tools/shape.py as it was, issue 47).

**A LIMIT the question did not ask for.** "What is the total number of publications in
each year?" written with `ORDER BY total DESC LIMIT 10` hides every year past the tenth.
The LIMIT of the outermost query goes when the question names no number and no
superlative (top, first, most, highest, strongest, ...: `lexicon.asks_for_few`) and the
query does not rank by relevance (`semantic()`): the prompt's rules 7 and 8, enforced.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.rewrite.lexicon import asks_for_few


def drop_unasked_limit(tree: exp.Query, question: str) -> str:
    limit = tree.args.get("limit")
    if limit is None or tree.args.get("offset") is not None or asks_for_few(question):
        return ""
    order = tree.args.get("order")
    if order is not None and any(f.name.lower() == "semantic" for f in order.find_all(exp.Anonymous)):
        return ""  # a ranking by relevance needs its cut-off (the prompt's rule 7)
    tree.set("limit", None)
    return f"dropped {limit.sql(dialect=DIALECTS[QL_DIALECT])}: the question asks for every row"
