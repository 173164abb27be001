"""`skip_key_passing_joins`, a before-run rule of the query alone (moved out of tools/shape.py
as it was, issue 47).

**A join that only passes a key along, under an aggregate.** "What is the average clarity
score for each instructor who taught a course?" written `FROM instructor AS i JOIN
comment_instructor AS ci ON i.instructor_id = ci.instructor_id JOIN offering_instructor AS
oi ON ci.instructor_id = oi.instructor_id ...` averages each course once per comment on its
instructor, and drops the instructors nobody commented on. When the outermost query
aggregates, and an inner-joined table is read only in join conditions, each time as the
same column equal to another table's column, and in at least one later condition, and
its own condition is that equality alone, the join goes and the later conditions read the
column it was joined on (`oi.instructor_id = i.instructor_id`).
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.rewrite.sql import inner_join


def skip_key_passing_joins(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or not any(e.find(exp.AggFunc) for e in tree.expressions):
        return ""
    skipped = []
    for join in list(tree.args.get("joins") or []):
        table = join.this
        if not isinstance(table, exp.Table) or not inner_join(join):
            continue
        alias = table.alias_or_name.lower()
        read = [c for c in tree.find_all(exp.Column) if c.table.lower() == alias]
        own = [c for c in read if c.find_ancestor(exp.Join) is join]
        if len(read) < 2 or len(own) != 1 or len({c.name.lower() for c in read}) != 1:
            continue
        if join.args.get("on") is not own[0].parent:
            continue  # its condition says more than the key
        partners = [_equated_with(c) for c in read]
        if any(p is None or p.find_ancestor(exp.Join) is None for p in partners):
            continue  # read outside a join condition, or not in an equality of two columns
        partner = _equated_with(own[0])
        assert partner is not None
        for column in read:
            if column is not own[0]:
                column.replace(partner.copy())
        join.pop()
        skipped.append(f"{table.name} (read for {own[0].name} only)")
    return (
        f"dropped joins that only passed a key along, which repeat the rows aggregated: {', '.join(skipped)}"
        if skipped
        else ""
    )


def _equated_with(column: exp.Column) -> exp.Column | None:
    """The other column of `a = b` when `column` is one side of it and both are columns."""
    equality = column.parent
    if not isinstance(equality, exp.EQ):
        return None
    other = equality.right if equality.left is column else equality.left
    return other if isinstance(other, exp.Column) and other is not column else None
