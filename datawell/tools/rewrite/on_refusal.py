"""The rules that mend a query the checker refused, each body in its own module of this
package. Each runs on every SELECT of the query, with the datasets that SELECT reads; the
mended query is then fitted by the before-run rules afresh (graphs/nl2ql/mending.mended)."""

from __future__ import annotations

from datawell.tools.rewrite.bridge_joins import bridge_joins
from datawell.tools.rewrite.change import Context, Reads, Rule, Scope, Tier
from datawell.tools.rewrite.column_named_by_question import column_named_by_question
from datawell.tools.rewrite.drop_dead_joins import drop_dead_joins
from datawell.tools.rewrite.drop_invented_filters import drop_invented_filters
from datawell.tools.rewrite.drop_phantom_joins import drop_phantom_joins
from datawell.tools.rewrite.epoch_to_timestamps import epoch_to_timestamps
from datawell.tools.rewrite.join_missing_table import join_missing_table
from datawell.tools.rewrite.near_column_names import near_column_names
from datawell.tools.rewrite.requalify_columns import requalify_columns
from datawell.tools.rewrite.sql import qualifiers_read
from datawell.tools.rewrite.swap_tables import swap_tables
from datawell.tools.rewrite.years_as_stored import years_as_stored


def _invented_filters(scope: Scope, context: Context) -> list[str]:
    if not context.question:
        return []
    reasons = drop_invented_filters(scope.select, scope.sources, context.question)
    if reasons:  # the columns read are counted after the invented filters went, before any slip moves one
        scope.read_for = qualifiers_read(scope.tree)
    return reasons


def _named_by_question(scope: Scope, context: Context) -> list[str]:
    if not context.question:
        return []
    return column_named_by_question(scope.select, scope.sources, context.question)


R: Tier = "repair"
Q: Reads = "question"
C: Reads = "catalog"

RULES = (
    Rule("drop_invented_filters", "on_refusal", R, (Q, C), "select", _invented_filters,
         "filters on texts the question never says go when one of them cannot run, with joins read only there"),
    Rule("drop_phantom_joins", "on_refusal", R, (C,), "select",
         lambda s, _: drop_phantom_joins(s.select, s.sources, s.catalog, s.tree),
         "a join of a table no dataset is named, for columns a table of the SELECT has: dropped, read there"),
    Rule("near_column_names", "on_refusal", R, (C,), "select",
         lambda s, _: near_column_names(s.select, s.sources),
         "a column name one letter or two off the only close one its table has is read by its name"),
    Rule("swap_tables", "on_refusal", R, (C,), "select",
         lambda s, _: swap_tables(s.select, s.sources, s.catalog),
         "a table lacking columns that exactly one other dataset has all of is read as that dataset"),
    Rule("bridge_joins", "on_refusal", R, (C,), "select",
         lambda s, _: bridge_joins(s.select, s.sources, s.catalog, s.defined),
         "a join on a column one side lacks goes through the one dataset that links both"),
    Rule("join_missing_table", "on_refusal", R, (C,), "select",
         lambda s, _: join_missing_table(s.select, s.sources, s.catalog, s.defined),
         "columns no table of the SELECT has, held by one dataset sharing one column with it: joined"),
    Rule("requalify_columns", "on_refusal", R, (C,), "select",
         lambda s, _: requalify_columns(s.select, s.sources, s.defined),
         "a column read through an alias that lacks it, held by exactly one table of the SELECT: read there"),
    Rule("drop_dead_joins", "on_refusal", R, (C,), "select",
         lambda s, _: drop_dead_joins(s.select, s.sources, s.tree, s.read_for),
         "an inner join that cannot run, of a table now read for nothing else: dropped"),
    Rule("epoch_to_timestamps", "on_refusal", R, (C,), "select",
         lambda s, _: epoch_to_timestamps(s.select, s.sources),
         "a column of Unix seconds in a date function is read as to_timestamp()"),
    Rule("years_as_stored", "on_refusal", R, (C,), "select",
         lambda s, _: years_as_stored(s.select, s.sources),
         "the year of a column that holds years is the column itself"),
    Rule("column_named_by_question", "on_refusal", R, (Q, C), "select", _named_by_question,
         "a column the table lacks, where several share its word: the one the question describes most"),
)  # fmt: skip
