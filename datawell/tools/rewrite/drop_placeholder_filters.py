"""`drop_placeholder_filters`, a before-run rule of the query and the question (moved out of
tools/shape.py as it was, issue 47).

**A filter to a placeholder nobody asked for.** "What is the average cost of a one-way
trip for each airport pair?" written `WHERE restriction_code = 'NONE'` averages only the
unrestricted fares. A top-level equality of a column with a text that stands for nothing
(NONE, N/A, NULL, unknown, ...) goes when the question names no word of the column
(`lexicon.says_a_word_of`) and says nothing of the kind (no, none, without, missing,
unknown, ...: `lexicon.speaks_of_nothing`).
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.rewrite.lexicon import says_a_word_of, speaks_of_nothing

# Texts that stand for "nothing" in a column: a filter to one of them says "none of this".
_PLACEHOLDERS = frozenset(["none", "n/a", "na", "null", "nil", "unknown", "-", ""])


def drop_placeholder_filters(tree: exp.Query, question: str) -> str:
    where = tree.args.get("where") if isinstance(tree, exp.Select) else None
    if where is None:
        return ""
    if speaks_of_nothing(question):
        return ""  # "fares with no restriction", "... without a code": the question may ask for it
    conditions = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    kept: list[exp.Expr] = []
    dropped: list[exp.Expr] = []
    for condition in conditions:
        sides = (condition.this, condition.expression) if isinstance(condition, exp.EQ) else ()
        column = next((s for s in sides if isinstance(s, exp.Column)), None)
        text = next((s for s in sides if isinstance(s, exp.Literal) and s.is_string), None)
        invented = (
            column is not None
            and text is not None
            and text.this.strip().lower() in _PLACEHOLDERS
            and not says_a_word_of(question, column.name.replace("_", " "))
        )
        (dropped if invented else kept).append(condition)
    if not dropped:
        return ""
    tree.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    return "dropped filters on a placeholder for nothing, of a column the question never names: " + ", ".join(
        d.sql(dialect=DIALECTS[QL_DIALECT]) for d in dropped
    )
