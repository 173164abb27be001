"""The curator's nodes: find candidates in the data, let the model select, store the result."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from datawell.errors import ModelError
from datawell.graphs.curator.state import CuratorContext, CuratorDeps, CuratorState, LinkSelection, Selection
from datawell.graphs.events import CandidatesFound, CuratedLink, LinksCurated, emit
from datawell.graphs.structured import ask_structured
from datawell.ontology.candidate import Candidate
from datawell.ontology.candidates import find_candidates
from datawell.ontology.links import NewLink, drop_suggested, save_links
from datawell.storage.datasets import DatasetRef
from datawell.storage.links import ACTIVE, SUGGESTED

log = logging.getLogger(__name__)


async def find(state: CuratorState, deps: CuratorDeps) -> dict[str, Any]:
    candidates = await find_candidates(
        deps.rows,
        deps.vectors,
        deps.embedder,
        state.datasets,
        focus=state.focus.record.id if state.focus is not None else None,
        options=deps.options,
    )
    kept = candidates[: deps.max_candidates]
    emit(CandidatesFound(count=len(kept)))
    return {"candidates": kept}


def after_find(state: CuratorState) -> Literal["select", "store"]:
    return "select" if state.candidates else "store"


def model_label(model: BaseChatModel, context: CuratorContext) -> str:
    """The model's name as recorded on the links it curated."""
    chosen = context.choices.for_stage("curate").litellm_name()
    named = getattr(model, "model_name", None) or getattr(model, "model", None)
    return chosen or (named if isinstance(named, str) else None) or model._llm_type


def render_datasets(datasets: Sequence[DatasetRef], candidates: Sequence[Candidate]) -> str:
    involved = {c.origin_dataset_id for c in candidates} | {c.destination_dataset_id for c in candidates}
    lines = []
    for dataset in datasets:
        if dataset.record.id not in involved:
            continue
        record = dataset.record
        fields = "; ".join(
            f"{name} ({record.field_types.get(name, 'text')}): {description}"
            for name, description in record.schema_definition.items()
        )
        lines.append(f"- {dataset.name}: {record.description or '(no description)'}\n  fields: {fields}")
    return "\n".join(lines)


def render_candidate(label: str, candidate: Candidate) -> str:
    examples = f"\n  examples: {', '.join(candidate.samples)}" if candidate.samples else ""
    return (
        f"{label} [{candidate.match_type.value}] {candidate.origin} -> {candidate.destination}"
        f" (hits {candidate.hits}, score {candidate.score:.2f})\n  evidence: {candidate.evidence}{examples}"
    )


def evident_reason(candidate: Candidate) -> str:
    return (
        f"Every value of {candidate.origin} is a value of {candidate.destination}, which has one row per "
        "value: a reference the data shows, selected without the model."
    )


async def select(state: CuratorState, runtime: Runtime[CuratorContext], deps: CuratorDeps) -> dict[str, Any]:
    """Select the evident candidates (see `Candidate.evident`) and ask the model about the
    others in batches; keep what it selects, with its reason. The model misjudged links the
    data settles (the 1.5B model rejected `readings.station` -> `stations.station_code`,
    all five codes of a key), so it only decides what the data cannot."""
    context = runtime.context
    model = deps.models.for_stage("curate", context.choices)
    prompt = deps.prompts.get("curate_links")
    selected = [Selection(c, evident_reason(c)) for c in state.candidates if c.evident]
    doubtful = [c for c in state.candidates if not c.evident]
    labelled = [(f"L{i}", c) for i, c in enumerate(doubtful, start=1)]
    for start in range(0, len(labelled), deps.batch_size):
        batch = labelled[start : start + deps.batch_size]
        messages = prompt.render(
            namespace=str(context.namespace),
            datasets=render_datasets(state.datasets, [c for _, c in batch]),
            candidates="\n".join(render_candidate(label, c) for label, c in batch),
        )
        try:
            answer = await ask_structured(model, LinkSelection, messages)
        except Exception as exc:  # a provider failure of any kind is the model's failure
            raise ModelError("the curator model failed", detail=str(exc)) from exc
        if answer.parsed is None:
            raise ModelError("the curator model did not return a selection", detail=answer.problem)
        chosen_links = answer.parsed.selected
        by_label = dict(batch)
        for chosen in chosen_links:
            candidate = by_label.pop(chosen.id.strip(), None)
            if candidate is None:
                log.info("curator model chose %r, which is not a candidate of this batch", chosen.id)
                continue
            selected.append(Selection(candidate, chosen.reason.strip()))
    return {"selected": selected, "model_name": model_label(model, context)}


async def store(state: CuratorState, runtime: Runtime[CuratorContext], deps: CuratorDeps) -> dict[str, Any]:
    """Activate the selection, or keep it as suggestions (replacing earlier suggestions for the
    curated datasets; active links are never demoted)."""
    links = [
        NewLink(
            origin=str(s.candidate.origin),
            destination=str(s.candidate.destination),
            origin_dataset_id=s.candidate.origin_dataset_id,
            destination_dataset_id=s.candidate.destination_dataset_id,
            match_type=s.candidate.match_type,
            hits=s.candidate.hits,
            score=s.candidate.score,
            reason=s.reason,
        )
        for s in state.selected
    ]
    context = runtime.context
    async with deps.db.session() as session:
        if not context.activate:
            await drop_suggested(session, context.namespace.id, [d.record.id for d in state.curated])
        if links:
            await save_links(
                session,
                context.namespace.id,
                links,
                status=ACTIVE if context.activate else SUGGESTED,
                curated_by=context.user.id,
                model=state.model_name,
            )
    curated = [
        CuratedLink(
            origin=link.origin,
            destination=link.destination,
            match_type=link.match_type.value,
            hits=link.hits,
            score=link.score,
            reason=link.reason,
        )
        for link in links
    ]
    emit(LinksCurated(datasets_processed=len(state.curated), links=curated, activated=context.activate))
    return {}
