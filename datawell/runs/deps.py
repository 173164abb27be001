"""The graphs' dependencies built from the services, and a graph run's config (the current
run's recorder hears its nodes and model calls)."""

from __future__ import annotations

from dataclasses import replace

from langchain_core.runnables import RunnableConfig

from datawell.graphs.assistant.nodes import AssistantDeps, Budgets
from datawell.graphs.curator.state import CuratorDeps
from datawell.graphs.nl2ql.deps import QueryDeps
from datawell.graphs.view import NamespaceView
from datawell.observability import recorder as recording
from datawell.services import Services
from datawell.tools.checker import Caps
from datawell.tools.linking import SchemaLinker
from datawell.tools.pruning import PruneLimits, SchemaPruner
from datawell.tools.retrieved_examples import bundled_corpus
from datawell.tools.rewrite.registry import rules_off
from datawell.tools.web import HttpWebSearch

DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def graph_config() -> RunnableConfig:
    """A graph run's config: the current run's recorder hears its nodes and model calls."""
    recorder = recording.current()
    return {"callbacks": [recorder.callbacks()]} if recorder is not None else {}


def query_deps(services: Services) -> QueryDeps:
    s = services
    return QueryDeps(
        tools=s.queries,
        models=s.models,
        prompts=s.prompts,
        view=NamespaceView(
            s.queries,
            pruner=SchemaPruner(
                s.embedder,
                PruneLimits(
                    s.settings.schema_prune_tables, s.settings.schema_prune_columns, s.settings.schema_prune_keep
                ),
            ),
            linker=SchemaLinker(s.embedder) if s.settings.schema_linking else None,
            linked_joins=s.settings.schema_linking_joins,
            examples=s.examples,
            few_shot=s.settings.query_few_shot,
            retrieved=bundled_corpus() if s.settings.retrieved_examples else None,
            retrieved_count=s.settings.retrieved_examples,
            leave_own_out=s.settings.retrieved_examples_leave_own_out,
        ),
        max_attempts=s.settings.query_max_attempts,
        caps=s.settings.group(Caps, "query_max_"),
        dialect=DIALECT_NAMES.get(s.rows.dialect, s.rows.dialect),
        name_columns=s.settings.query_name_columns,
        query_grammar=s.settings.query_grammar,
        query_grammar_repairs=s.settings.query_grammar_repairs,
        match_literals=s.settings.query_match_literals,
        fit_shape=s.settings.query_fit_shape,
        mend=s.settings.query_mend,
        rules_off=rules_off(s.settings.query_rules_disabled, s.settings.query_rules_enabled),
        refuse_unheld_subject=s.settings.query_refuse_unheld_subject,
        coverage=s.embedder if s.settings.query_refuse_uncovered else None,
        candidates=s.settings.query_candidates,
        candidate_temperature=s.settings.query_candidate_temperature,
    )


def assistant_deps(services: Services) -> AssistantDeps:
    settings = services.settings
    return AssistantDeps(
        # The steps' rows are read back in words: a ranking shows its measure (tools/rewrite/select_ranking_measure.py).
        query=replace(query_deps(services), show_measure=True),
        budgets=Budgets(
            max_rows_per_step=settings.max_rows_per_step,
            max_tokens_per_run=settings.max_tokens_per_run,
        ),
        web=HttpWebSearch(settings.web_search_url, settings.web_search_timeout_seconds)
        if settings.web_search_url
        else None,
        web_results=settings.web_search_results,
    )


def curator_deps(services: Services) -> CuratorDeps:
    s = services
    return CuratorDeps(db=s.db, rows=s.rows, vectors=s.vectors, embedder=s.embedder, models=s.models, prompts=s.prompts)
