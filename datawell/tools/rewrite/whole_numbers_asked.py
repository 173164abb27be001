"""`whole_numbers_asked`, a before-run rule of the query and the question (moved out of
tools/shape.py as it was, issue 47).

**Fractions where whole numbers were asked for.** "What's the difference in days between
today and the earliest departure? Give the answer as an integer." written `SELECT
julianday('now') - MIN(julianday(departure))` answers 2522.5. When the question asks for
an integer ("as an integer", "to integer minutes", "in whole days":
`lexicon.asks_for_whole_numbers`), each selected value the query computes (arithmetic, an
aggregate other than COUNT, a function) that is not cast to an integer already is: `CAST(...
AS INT)`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.rewrite.lexicon import asks_for_whole_numbers

_INTEGER_TYPES = frozenset(exp.DataType.INTEGER_TYPES)


def whole_numbers_asked(tree: exp.Query, question: str) -> str:
    if not isinstance(tree, exp.Select) or not asks_for_whole_numbers(question):
        return ""
    cast = []
    for selected in tree.expressions:
        value = selected.unalias()
        if isinstance(value, (exp.Column, exp.Literal, exp.Count)) or not _computes(value):
            continue  # a stored value or a count: whole already, or not a number to round
        if isinstance(value, exp.Cast) and value.to.this in _INTEGER_TYPES:
            continue
        name = selected.alias_or_name if isinstance(selected, exp.Alias) else ""
        whole = exp.cast(value.copy(), exp.DataType.Type.INT)
        selected.replace(whole.as_(name) if name else whole)
        cast.append(name or value.sql(dialect=DIALECTS[QL_DIALECT]))
    return f"cast to whole numbers, as the question asks: {', '.join(cast)}" if cast else ""


def _computes(node: exp.Expr) -> bool:
    """Whether a selected expression computes a number: arithmetic, or a function (aggregates
    and casts are functions too), not a comparison or a condition."""
    return isinstance(node, (exp.Binary, exp.Func, exp.Paren)) and not isinstance(node, (exp.Predicate, exp.Connector))
