"""`swap_tables`, an on-refusal rule: it runs on each SELECT of a query the checker refused,
with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**The table that lacks a column.** `FROM course JOIN student ON course.course_id =
student.course_id`, where `student` has no `course_id` but exactly one other dataset
(`student_record`) holds every column the query reads of `student`: that dataset is read
instead, under the same alias.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.names import parts
from datawell.tools.rewrite.sql import Source, own_columns


def swap_tables(select: exp.Select, sources: dict[str, Source], catalog: Catalog) -> list[str]:
    changes: list[str] = []
    read = {s.info.name for s in sources.values()}
    columns = own_columns(select)
    for alias, source in sources.items():
        used = {c.name.lower() for c in columns if c.table.lower() == alias}
        missing = sorted(c for c in used if not source.has(c))
        if not missing:
            continue
        holding = [t for t in catalog.tables if t.name not in read and used <= {c.lower() for c in t.columns}]
        named_alike = [t for t in holding if set(parts(t.dataset_name)) & set(parts(source.info.dataset_name))]
        chosen = holding if len(holding) == 1 else named_alike
        if len(chosen) != 1:
            continue
        new = chosen[0]
        if not source.node.alias:
            source.node.set("alias", exp.TableAlias(this=exp.to_identifier(source.node.name)))
        source.node.set("this", exp.to_identifier(new.name))
        sources[alias] = Source(source.node, new)
        read.add(new.name)
        changes.append(
            f"{source.info.name} has no {', '.join(missing)}: read {new.name}, which has {', '.join(sorted(used))}"
        )
    return changes
