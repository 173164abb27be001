"""`python -m tests.agents.serve_fakes PORT`: the real app under uvicorn, with the graph runs
replaced by the fakes of `tests.fake_runs` (settings from DATAWELL_* as usual). Started by
test_server_process.py; never part of the product."""

from __future__ import annotations

import sys

import uvicorn

from datawell.app import Overrides, create_app
from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from tests.fake_runs import FakeRuns


def main() -> None:
    overrides = Overrides(
        models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder(), runs=FakeRuns().bind
    )
    app = create_app(Settings(), overrides)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
