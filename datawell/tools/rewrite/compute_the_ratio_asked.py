"""`compute_the_ratio_asked`, a before-run rule of the query and the question, applied to the
query's text (moved out of tools/shape.py as it was, issue 47). Its docstring below says what
it does."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.coverage import singular
from datawell.tools.rewrite.change import Shaped
from datawell.tools.rewrite.lexicon import ratio_asked


def compute_the_ratio_asked(query: str, question: str) -> Shaped:
    """`query` with the ratio the question asks for computed from the two aggregates it
    selects: "How does the ratio of publications to journals change over the years? Return the
    annual numbers of publications and journals as well." written `SELECT year, COUNT(pid) AS
    publications, COUNT(jid) AS journals ...` shows both numbers and no ratio. When the
    question asks for the "ratio of A to B", the outermost query divides nothing, and exactly
    one selected aggregate is named for A and one for B (their aliases hold the words),
    `CAST(A AS DOUBLE PRECISION) / NULLIF(B, 0) AS ratio` is selected after them."""
    asked = ratio_asked(question)
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if asked is None or not isinstance(tree, exp.Select) or tree.find(exp.Div):
        return Shaped(query, [])

    def named(word: str) -> list[exp.Expr]:
        stem = singular(word.lower())
        return [
            e
            for e in tree.expressions
            if isinstance(e, exp.Alias) and e.this.find(exp.AggFunc) and stem in singular(e.alias.lower())
        ]

    dividends, divisors = named(asked[0]), named(asked[1])
    if len(dividends) != 1 or len(divisors) != 1 or dividends[0] is divisors[0]:
        return Shaped(query, [])
    ratio = exp.Div(
        this=exp.cast(dividends[0].this.copy(), exp.DataType.Type.DOUBLE),
        expression=exp.Nullif(this=divisors[0].this.copy(), expression=exp.Literal.number(0)),
    )
    tree.set("expressions", [*tree.expressions, ratio.as_("ratio")])
    return Shaped(
        tree.sql(dialect=DIALECTS[QL_DIALECT]),
        [f"selected the ratio asked for: {dividends[0].alias} to {divisors[0].alias}"],
    )
