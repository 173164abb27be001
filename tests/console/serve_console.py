"""`python -m tests.console.serve_console PORT`: the real app under uvicorn for the browser
tests, with the in-process ingestion worker, the assistant run replaced by the canned
`tests.fake_runs` runs, and a scripted model that selects every link candidate it is shown
(column mapping falls back to matching names). Settings from DATAWELL_* as usual."""

from __future__ import annotations

import re
import sys

import uvicorn
from langchain_core.messages import BaseMessage

from datawell.app import Overrides, create_app
from datawell.config import Settings
from datawell.graphs.curator.state import ChosenLink, LinkSelection
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from tests.fake_runs import FakeRuns


def answer(messages: list[BaseMessage]) -> str | LinkSelection:
    text = str(messages[-1].content)
    labels = re.findall(r"^(L\d+) \[", text, flags=re.MULTILINE)
    if labels:
        return LinkSelection(selected=[ChosenLink(id=label, reason="the same values") for label in labels])
    return "no mapping"


def main() -> None:
    model = ScriptedChatModel([answer] * 10_000)
    overrides = Overrides(models=FixedChatModels(model), embedder=HashingEmbedder(), runs=FakeRuns().bind)
    app = create_app(Settings(), overrides)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
