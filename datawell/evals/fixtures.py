"""Fixture datasets: small CSV files with a YAML description, loaded into a fresh store
before a suite runs.

A fixture is a folder named after the namespace it becomes, holding `fixture.yaml`
(the datasets: description, CSV file, fields with type and description, which fields are
embedded for `semantic()`; and the links between them) and the CSV files. Loading goes
through the same stores ingestion uses: a dataset record with its field types, rows
staged, embedded and published through `RowStore`, vectors through the embedder and
`VectorStore`, links as `Active` rows of the links table."""

from __future__ import annotations

import csv
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datawell.evals.suites import FIXTURES_DIR, MatchType, Suite, SuiteError, format_validation_error
from datawell.services import Services
from datawell.storage import access, datasets, users
from datawell.storage.access import NamespaceRef
from datawell.storage.datasets import DatasetRef
from datawell.storage.tables import Link, User
from datawell.storage.vectors import ROWS, Point

EVAL_USER = "evals"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class FieldSpec(_Strict):
    type: Literal["integer", "real", "text", "boolean", "timestamp"]
    description: str = ""


class DatasetSpec(_Strict):
    description: str
    file: str
    fields: dict[str, FieldSpec] = Field(min_length=1)
    embed: list[str] = Field(default_factory=list, description="text fields embedded for semantic()")


class LinkSpec(_Strict):
    origin: str = Field(pattern=r"^[^/]+/[^.]+\.[^.]+$")
    destination: str = Field(pattern=r"^[^/]+/[^.]+\.[^.]+$")
    match_type: MatchType = Field(alias="matchType")
    hits: int = 0


class Fixture(_Strict):
    description: str = ""
    datasets: dict[str, DatasetSpec] = Field(min_length=1)
    links: list[LinkSpec] = Field(default_factory=list)
    name: str = Field("", exclude=True)
    folder: Path = Field(Path(), exclude=True)

    def rows(self, dataset: str) -> list[dict[str, Any]]:
        """The dataset's CSV rows with values converted to the declared field types."""
        spec = self.datasets[dataset]
        path = self.folder / spec.file
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = set(spec.fields) - set(reader.fieldnames or [])
            if missing:
                raise SuiteError(f"{path}: columns {sorted(missing)} are declared but not in the file")
            return [
                {name: convert(row[name], f.type, f"{path}:{line}") for name, f in spec.fields.items()}
                for line, row in enumerate(reader, start=2)
            ]


def convert(text: str, kind: str, where: str) -> Any:
    if text == "":
        return None
    try:
        if kind == "integer":
            return int(text)
        if kind == "real":
            return float(text)
        if kind == "boolean":
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(f"{text!r} is not a boolean")
            return text.lower() in ("true", "1", "yes")
        if kind == "timestamp":
            value = datetime.fromisoformat(text)
            return value if value.tzinfo else value.replace(tzinfo=UTC)
    except ValueError as exc:
        raise SuiteError(f"{where}: {exc}") from None
    return text


def fixture_folder(name: str, suite: Suite | None = None) -> Path:
    """A fixture beside the suite (`fixtures/<name>` next to the suite file) or a bundled one."""
    candidates = []
    if suite is not None and suite.path is not None:
        candidates.append(suite.path.parent / "fixtures" / name)
    candidates.append(FIXTURES_DIR / name)
    for folder in candidates:
        if (folder / "fixture.yaml").is_file():
            return folder
    raise SuiteError(f"no fixture {name!r} (looked in {', '.join(str(c) for c in candidates)})")


def load_fixture(name: str, suite: Suite | None = None) -> Fixture:
    folder = fixture_folder(name, suite)
    path = folder / "fixture.yaml"
    try:
        fixture = Fixture.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except ValidationError as exc:
        raise SuiteError(format_validation_error(exc, str(path), "fixture")) from None
    fixture = fixture.model_copy(update={"name": name, "folder": folder})
    for dataset, spec in fixture.datasets.items():
        unknown = set(spec.embed) - set(spec.fields)
        if unknown:
            raise SuiteError(f"{path}: datasets.{dataset}.embed names unknown fields {sorted(unknown)}")
    return fixture


@dataclass
class FixtureStore:
    """What a loaded suite's cases run against: the eval user and its namespaces."""

    user: User
    namespaces: dict[str, NamespaceRef]
    datasets: dict[str, DatasetRef] = field(default_factory=dict)  # "namespace/dataset" -> dataset

    def namespace(self, name: str) -> NamespaceRef:
        return self.namespaces[name]


def embedding_text(row: dict[str, Any], fields: list[str]) -> str:
    return "\n".join(f"{name}: {row[name]}" for name in fields if row.get(name) not in (None, ""))


async def load_fixtures(services: Services, suite: Suite) -> FixtureStore:
    """Create the eval user, one namespace per fixture, its datasets, rows, vectors and links."""
    async with services.db.session() as session:
        user = await users.find_user(session, EVAL_USER) or await users.create_user(session, EVAL_USER)
    store = FixtureStore(user=user, namespaces={})
    for name in suite.fixtures:
        fixture = load_fixture(name, suite)
        await _load_one(services, store, fixture, activate_links=suite.links)
    return store


async def _load_one(services: Services, store: FixtureStore, fixture: Fixture, *, activate_links: bool) -> None:
    async with services.db.session() as session:
        namespace = await access.ensure_namespace(session, store.user, fixture.name)
        for name, spec in fixture.datasets.items():
            ref = await datasets.create_dataset(
                session,
                namespace,
                name,
                spec.description,
                {f: s.description for f, s in spec.fields.items()},
                store.user,
            )
            ref.record.field_types = {f: s.type for f, s in spec.fields.items()}
            store.datasets[f"{fixture.name}/{name}"] = ref
    store.namespaces[fixture.name] = namespace
    for name, spec in fixture.datasets.items():
        ref = store.datasets[f"{fixture.name}/{name}"]
        ingestion = str(uuid.uuid4())
        await services.rows.stage(ref.record, ingestion)
        await services.rows.write(ref.record, ingestion, fixture.rows(name))
        if spec.embed:
            staged = await services.rows.staged_ids(ref.record, ingestion)
            texts = [embedding_text(row, spec.embed) for _, row in staged]
            vectors = await services.embedder.embed(texts)
            points = [
                Point(id=row_id, vector=vector, payload={"text": text})
                for (row_id, _), vector, text in zip(staged, vectors, texts, strict=True)
            ]
            await services.vectors.upsert(ROWS, ref.record.id, points)
        await services.rows.publish(ref.record, ingestion, source=spec.file)
    if activate_links and fixture.links:
        async with services.db.session() as session:
            for link in fixture.links:
                session.add(
                    Link(
                        namespace_id=namespace.id,
                        origin_dataset_id=_dataset_of(store, link.origin).record.id,
                        destination_dataset_id=_dataset_of(store, link.destination).record.id,
                        origin=link.origin,
                        destination=link.destination,
                        hits=link.hits,
                        match_type=link.match_type,
                        score=1.0,
                        status="Active",
                        reason="eval fixture",
                        curated_by=store.user.id,
                    )
                )


def _dataset_of(store: FixtureStore, field_path: str) -> DatasetRef:
    dataset = field_path.rsplit(".", 1)[0]
    if dataset not in store.datasets:
        raise SuiteError(f"link end {field_path!r} names no dataset of the fixtures")
    return store.datasets[dataset]
