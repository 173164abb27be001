"""What tools/shape.py's rules still read of the mend rules, which moved to tools/rewrite/ (issue 47)."""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import TableInfo
from datawell.tools.coverage import singular


def key_names(table: TableInfo) -> set[str]:
    """A table's own key, by its name, among its columns: its singular with `_id`, `_code`,
    `_no` or `_number`; else its name's last word's; else, for a one-word name, its initial
    with `id`."""
    columns = {c.lower() for c in table.columns}
    whole = singular(table.name.lower())
    for stem in (whole, singular(whole.rsplit("_", 1)[-1])):  # `offering_id` of course_offering
        if names := {f"{stem}_{suffix}" for suffix in ("id", "code", "no", "number")} & columns:
            return names
    if "_" in whole:  # domain_journal is a link, not a thing with a key
        return set()
    return {f"{whole[:1]}id"} & columns  # academic's `aid` of author, `pid` of publication


def inner_join(join: exp.Join) -> bool:
    """Whether the join is an inner one (`JOIN` or `INNER JOIN`): dropping an outer join would
    lose the rows it keeps."""
    return not join.args.get("side") and join.args.get("kind") in (None, "INNER")
