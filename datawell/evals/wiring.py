"""The real targets an eval run calls: the graph runs, the query tools, the curator.
Kept apart from the runner so tests can run the runner with fakes and nothing else."""

from __future__ import annotations

from datawell.evals.records import PredictedLink
from datawell.evals.runner import CurateRequest, QueryRunner, Targets
from datawell.graphs.runs import run_assistant, run_nl2ql
from datawell.services import Services
from datawell.storage.datasets import get_dataset, list_datasets


def query_tools(services: Services) -> QueryRunner:
    return services.query_tools


async def curate(services: Services, request: CurateRequest) -> list[PredictedLink]:
    """Run the curator graph on the namespace (or one dataset) without activating anything."""
    # Imported here: the curator graph lives in its own package and is only needed by curator suites.
    from datawell.graphs.curator.graph import curate as run_curator
    from datawell.graphs.curator.state import CuratorState
    from datawell.graphs.runs import curator_deps

    async with services.db.session() as session:
        datasets = await list_datasets(session, request.namespace)
        focus = await get_dataset(session, request.namespace, request.dataset) if request.dataset else None
    deps = curator_deps(services)
    state = CuratorState(
        namespace=request.namespace,
        datasets=datasets,
        curator_id=request.user.id,
        focus=focus,
        activate=False,
        choices=request.choices,
    )
    result = await run_curator(deps, state)
    return [
        PredictedLink(
            origin=str(s.candidate.origin),
            destination=str(s.candidate.destination),
            match_type=s.candidate.match_type.value,
            hits=s.candidate.hits,
        )
        for s in result.selected
    ]


def targets() -> Targets:
    return Targets(nl2ql=run_nl2ql, assistant=run_assistant, curator=curate, query_tools=query_tools)
