"""The service objects every request handler, worker and command shares, and how they are
built from settings (`build_services`, once per process or eval run) and handed down explicitly."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from dataclasses import dataclass, field

from datawell.config import Settings
from datawell.graphs.memory import ConversationMemory
from datawell.llm.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder, StaticMiniLMEmbedder
from datawell.llm.models import ChatModels
from datawell.observability import metrics
from datawell.prompts import PromptLibrary
from datawell.scheduler import Limits, ModelScheduler
from datawell.storage.bulk import return_freed_arrow_memory
from datawell.storage.db import Database
from datawell.storage.migration import convert_local_mode
from datawell.storage.moves import move_row_tables
from datawell.storage.objects import LocalObjectStore, ObjectStore
from datawell.storage.qdrant import QdrantVectorStore
from datawell.storage.rows import RowStore
from datawell.storage.s3 import S3ObjectStore
from datawell.storage.tokens import TokenAuthority, signing_secret, token_authority
from datawell.storage.vector_index import EmbeddedVectorStore
from datawell.storage.vectors import VectorStore
from datawell.tools import sandbox
from datawell.tools.checker import Caps
from datawell.tools.examples import VerifiedExamples
from datawell.tools.ql import Queries, QueryTools
from datawell.tools.rewrite.registry import rules_off

API_PREFIX = "/api/v1"  # where the app mounts the REST API
PART_PATH = "/upload/parts"  # under API_PREFIX: where the local object store's part URLs point


@dataclass
class Services:
    settings: Settings
    db: Database
    tokens: TokenAuthority
    rows: RowStore
    vectors: VectorStore
    embedder: Embedder
    models: ChatModels
    prompts: PromptLibrary
    objects: ObjectStore
    query_tools: QueryTools
    # What the graphs and verified examples ask of the query tools: `query_tools` itself,
    # unless an override hands them others (`Overrides.queries`).
    queries: Queries
    memory: ConversationMemory  # the assistant's conversations (LangGraph checkpointer)
    examples: VerifiedExamples  # verified question -> query pairs, checked as each caller
    scheduler: ModelScheduler  # every model call of the process waits here for a slot
    # Set when this process queues an ingestion: its worker claims it now, not at its next poll.
    work_queued: asyncio.Event = field(default_factory=asyncio.Event)

    async def close(self) -> None:
        await self.memory.close()
        await self.query_tools.close()
        await self.vectors.close()
        await self.rows.close()
        await self.db.close()


@dataclass(frozen=True)
class Overrides:
    """Replacements for services that tests and eval runs swap in (scripted models, a hashing
    embedder, prompts from another folder)."""

    models: ChatModels | None = None
    embedder: Embedder | None = None
    prompts: PromptLibrary | None = None
    queries: Queries | None = None  # what the graphs and verified examples query through


def part_signing_key(secret: str) -> bytes:
    """The key of the local store's part URLs, derived from the token key so that every
    process sharing that key also accepts the others' URLs, while a part signature can never
    serve as a token signature (or the reverse)."""
    return hmac.new(secret.encode(), b"datawell upload part urls", hashlib.sha256).digest()


def build_object_store(settings: Settings, secret: str) -> ObjectStore:
    if settings.object_store == "s3":
        return S3ObjectStore.connect(
            settings.s3_bucket, endpoint_url=settings.s3_endpoint_url, region=settings.s3_region
        )
    return LocalObjectStore(
        settings.data_dir / "objects",
        signing_key=part_signing_key(secret),
        part_url_base=API_PREFIX + PART_PATH,  # made absolute per request by prepare
    )


def default_embedder(settings: Settings) -> Embedder:
    if not settings.embeddings_enabled:
        return HashingEmbedder()
    if settings.embeddings_model == "minilm":
        return MiniLMEmbedder()
    return StaticMiniLMEmbedder(settings.data_dir / "models" / settings.embeddings_model)


def default_models(settings: Settings) -> ChatModels:
    from datawell.llm.litellm_models import LiteLLMChatModels

    return LiteLLMChatModels(settings)


async def build_services(settings: Settings, overrides: Overrides | None = None) -> Services:
    overrides = overrides or Overrides()
    rules_off(settings.query_rules_disabled, settings.query_rules_enabled)  # an unknown name stops the start
    return_freed_arrow_memory()  # ingestions and exports: freed Arrow buffers go back at once
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.resolved_database_url)
    await db.migrate()
    secret = signing_secret(settings)
    tokens = token_authority(db, settings)
    embedder = overrides.embedder or default_embedder(settings)
    await move_row_tables(settings.resolved_database_url, settings.resolved_rows_database_url)
    rows = RowStore(settings.resolved_rows_database_url)
    vectors = await open_vector_store(settings, embedder)
    limits, caps = sandbox.Limits.of(settings), settings.group(Caps, "query_max_")
    query_tools = QueryTools(db, rows, vectors, embedder, row_cap=settings.query_row_cap, limits=limits, caps=caps)
    await query_tools.start()
    queries = overrides.queries or query_tools
    return Services(
        settings=settings,
        db=db,
        tokens=tokens,
        rows=rows,
        vectors=vectors,
        embedder=embedder,
        models=overrides.models or default_models(settings),
        prompts=overrides.prompts or PromptLibrary(),
        objects=build_object_store(settings, secret),
        query_tools=query_tools,
        queries=queries,
        memory=ConversationMemory(settings.resolved_database_url, settings.data_dir),
        examples=VerifiedExamples(db, queries, settings.query_few_shot_checks),
        scheduler=build_scheduler(settings),
    )


async def open_vector_store(settings: Settings, embedder: Embedder) -> VectorStore:
    """A Qdrant server when DATAWELL_QDRANT_URL is set, else the embedded index in the data
    folder (one process at a time), with an earlier release's local-mode vectors copied in."""
    if settings.qdrant_url:
        return QdrantVectorStore(embedder.dimension, url=settings.qdrant_url, space=embedder.space)
    folder = settings.data_dir / "vectors"
    await convert_local_mode(settings.data_dir / "qdrant", folder, embedder.dimension)
    return EmbeddedVectorStore(embedder.dimension, folder, space=embedder.space)


def build_scheduler(settings: Settings) -> ModelScheduler:
    return ModelScheduler(
        Limits(
            slots=settings.resolved_model_slots, queue=settings.model_queue, per_caller=settings.model_runs_per_user
        ),
        listener=metrics.QueueMetrics(settings.model or "embedded"),
    )
