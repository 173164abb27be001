"""The rules as the groups earlier releases ran them as one function each, for callers and
tests of a group's bodies: `fit_shape` (the before-run rules of the query alone), `mend` (the
on-refusal rules), `reroute_joins` (the two that reroute joins). Their changes are in words."""

from __future__ import annotations

from datawell.tools.catalog import Catalog
from datawell.tools.rewrite.change import Context, Mended, Shaped
from datawell.tools.rewrite.driver import apply_now
from datawell.tools.rewrite.registry import BEFORE_RUN, ON_REFUSAL

REROUTE = ("reroute_mistyped_joins", "reroute_crossed_keys")


def fit_shape(query: str, question: str, show_measure: bool = False) -> Shaped:
    """`query` fitted by the before-run rules that read neither the catalog nor the data."""
    rules = [r for r in BEFORE_RUN if r.kind == "tree"]
    done = apply_now(rules, query, Context(question, show_measure=show_measure))
    return Shaped(done.query, done.reasons)


def mend(query: str, catalog: Catalog, question: str = "") -> Mended:
    """The refused query with every on-refusal rule applied (the question's two only with it)."""
    done = apply_now(ON_REFUSAL, query, Context(question, catalog=catalog))
    return Mended(done.query, done.reasons)


def reroute_joins(query: str, catalog: Catalog) -> Mended:
    """The query with its joins of a number with a text, and of two tables' keys, rerouted."""
    done = apply_now([r for r in BEFORE_RUN if r.name in REROUTE], query, Context("", catalog=catalog))
    return Mended(done.query, done.reasons)
