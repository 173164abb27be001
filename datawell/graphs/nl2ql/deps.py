"""What the nl2ql graph's nodes are given: the tools, the models and the switches of issue 27."""

from __future__ import annotations

from dataclasses import dataclass

from datawell.graphs.view import NamespaceView
from datawell.llm.models import ChatModels
from datawell.prompts import PromptLibrary
from datawell.tools.checker import DEFAULT_CAPS, Caps
from datawell.tools.ql import Queries, TextEmbedder


@dataclass(frozen=True)
class QueryDeps:
    tools: Queries
    models: ChatModels
    prompts: PromptLibrary
    view: NamespaceView  # what the query writer is shown of the namespace
    max_attempts: int = 3
    caps: Caps = DEFAULT_CAPS  # the model's query is measured against these before any rewrite reads it
    dialect: str = "SQLite"  # whose date functions the model is told to use
    # The query writer names the catalog columns it uses before its query (constrained output).
    name_columns: bool = False
    # The embedded model decodes its query under a grammar of the catalog's names (tools/grammar.py).
    query_grammar: bool = False
    query_grammar_repairs: bool = False  # only the attempts after the first, told what was wrong
    match_literals: bool = True  # text literals matched to stored values before a query runs (issue 27)
    fit_shape: bool = True  # unasked LIMITs, whole-number division, unnamed groups mended (tools/rewrite/before_run.py)
    show_measure: bool = False  # a ranking's hidden measure selected, for answers in words (the assistant)
    rules_off: frozenset[str] = frozenset()  # rewrite rules switched off by name (tools/rewrite/registry.py)
    mend: bool = (
        True  # a refused query's slips with one sensible reading mended without the model (tools/rewrite/on_refusal.py)
    )
    refuse_unheld_subject: bool = True  # a question whose subject the catalog holds no word of is refused
    coverage: TextEmbedder | None = None  # set: questions the catalog does not cover are refused (issue 27)
    candidates: int = 1  # query candidates sampled and voted on by their results (issue 27)
    candidate_temperature: float = 0.7  # the sampling temperature of candidates after the first
