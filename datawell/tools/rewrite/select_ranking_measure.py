"""`select_ranking_measure`, a before-run rule of the query alone (moved out of tools/shape.py
as it was, issue 47) (before_run.py reads the question: a question that says what to show,
`lexicon.says_what_to_show`, is answered with that alone).

**A ranking whose measure is hidden** (`show_measure`: for answers written in words, the
assistant's steps). `SELECT name FROM doctors ... GROUP BY name ORDER BY COUNT(*) DESC
LIMIT 1` says who ranks first but not by how much, so the answer cannot say it either.
An aggregate the outermost query orders by and does not select is selected, after the
rest, and so is a plain column it ranks by under a LIMIT (of the rows, or a key of the
groups; no id: "Which flight ids have the longest duration?" shows `time_elapsed`). A query
asked for as a query (nl2ql) gets it only when its question does not say what to show:
"What are the top 5 domains with the highest number of authors?" is answered with the
numbers, "Which doctor had the most no-shows? Give the doctor's name." with the name alone.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT


def select_ranking_measure(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") is not None:
        return ""
    order = tree.args.get("order")
    if order is None:
        return ""
    selected = tree.expressions
    shown = {e.unalias().sql() for e in selected}
    names = {e.alias_or_name.lower() for e in selected}
    group = tree.args.get("group")
    # A plain column ranks (under a LIMIT) rows, or groups it is a key of.
    keys = {g.sql() for g in group.expressions} if group else set()
    rows = group is None and not any(e.find(exp.AggFunc) for e in selected)
    ranked = tree.args.get("limit") is not None
    added: list[exp.Expr] = []
    for ordered in order.expressions:
        measure = ordered.this
        if measure.sql() in shown or any(isinstance(e, exp.Star) for e in selected):
            continue
        if isinstance(measure, exp.Column) and ranked and (rows or measure.sql() in keys):
            if measure.name.lower() not in names and not _an_id(measure.name):
                names.add(measure.name.lower())
                added.append(measure.copy())
            continue
        if not isinstance(measure, exp.AggFunc):
            continue  # an alias of a selected column, or an expression
        name = _measure_name(measure)
        if name in names:
            continue
        names.add(name)
        shown.add(measure.sql())
        added.append(measure.copy().as_(name))
    if not added:
        return ""
    tree.set("expressions", [*selected, *added])
    return "selected the ranking's measure " + ", ".join(a.sql(dialect=DIALECTS[QL_DIALECT]) for a in added)


def _an_id(name: str) -> bool:
    """Whether a column is a row's id (`id`, `customer_id`): an order of rows, no measure."""
    return name.lower() == "id" or name.lower().endswith("_id")


def _measure_name(measure: exp.AggFunc) -> str:
    """`count` for COUNT(*), `count_patient_id` for COUNT(t.patient_id), `sum` for SUM(a * b)."""
    argument = measure.this
    if isinstance(argument, exp.Distinct):
        argument = argument.expressions[0] if len(argument.expressions) == 1 else None
    function = measure.key.lower()
    return f"{function}_{argument.name}" if isinstance(argument, exp.Column) and argument.name else function
