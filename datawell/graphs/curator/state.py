"""The curator's state, its run context, its dependencies, and what the model sees and returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from datawell.llm.embeddings import Embedder
from datawell.llm.models import ChatModels, StageChoices
from datawell.ontology.candidates import Candidate, CandidateOptions
from datawell.prompts import PromptLibrary
from datawell.storage.access import NamespaceRef
from datawell.storage.datasets import DatasetRef
from datawell.storage.db import Database
from datawell.storage.rows import RowStore
from datawell.storage.tables import User
from datawell.storage.vectors import VectorStore


@dataclass(frozen=True)
class CuratorDeps:
    db: Database
    rows: RowStore
    vectors: VectorStore
    embedder: Embedder
    models: ChatModels
    prompts: PromptLibrary
    options: CandidateOptions = field(default_factory=CandidateOptions)
    batch_size: int = 20  # candidates per model call
    max_candidates: int = 200  # strongest candidates shown to the model per run


@dataclass(frozen=True)
class Selection:
    candidate: Candidate
    reason: str


@dataclass(frozen=True)
class CuratorContext:
    """Who curates which namespace, with which model, and whether the links go live."""

    user: User
    namespace: NamespaceRef
    choices: StageChoices = field(default_factory=StageChoices)
    activate: bool = False


@dataclass
class CuratorState:
    datasets: list[DatasetRef]  # every dataset of the namespace: the other side of each link
    focus: DatasetRef | None = None  # only links from or to this dataset
    candidates: list[Candidate] = field(default_factory=list)
    selected: list[Selection] = field(default_factory=list)
    model_name: str = ""

    @property
    def curated(self) -> list[DatasetRef]:
        """The datasets this run curates."""
        return [self.focus] if self.focus is not None else self.datasets


class ChosenLink(BaseModel):
    id: str = Field(description="The candidate's id as listed, for example L3")
    reason: str = Field(description="One sentence: why joining these two fields is meaningful")


class LinkSelection(BaseModel):
    """The candidate links that are meaningful joins; an empty list when none is."""

    selected: list[ChosenLink] = Field(default_factory=list)
