"""The service objects every request handler, worker and command shares, and how they are
built from settings (`build_services`, once per process or eval run) and handed down explicitly."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from dataclasses import dataclass, field

from datawell.config import Settings
from datawell.graphs.memory import ConversationMemory
from datawell.llm.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder, StaticMiniLMEmbedder
from datawell.llm.models import ChatModels
from datawell.observability import metrics
from datawell.prompts import PromptLibrary
from datawell.scheduler import Limits, ModelScheduler
from datawell.slots import Rates, SlotBook
from datawell.storage.bulk import return_freed_arrow_memory
from datawell.storage.db import Database
from datawell.storage.migration import convert_local_mode, move_to_pgvector
from datawell.storage.moves import move_row_tables
from datawell.storage.objects import LocalObjectStore, ObjectStore
from datawell.storage.pgvector import PgVectorStore, enable_pgvector
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

log = logging.getLogger(__name__)
API_PREFIX = "/api/v1"  # where the app mounts the REST API
PART_PATH = "/upload/parts"  # under API_PREFIX: where the local object store's part URLs point
PREFILL_SAMPLE_TOKENS = 100  # a call that read fewer prompt tokens says little about the rate


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
    vectors = await open_vector_store(settings, embedder, rows)
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


async def open_vector_store(settings: Settings, embedder: Embedder, rows: RowStore) -> VectorStore:
    """DATAWELL_VECTOR_STORE's choice (`auto`: a Qdrant server when DATAWELL_QDRANT_URL is set,
    else pgvector in the rows' PostgreSQL when it can, else the embedded index in the data
    folder, one process at a time), with vectors an earlier release left in the data folder
    (local mode, the embedded index) copied in."""
    choice = settings.vector_store
    if choice == "qdrant" or (choice == "auto" and settings.qdrant_url):
        if not settings.qdrant_url:
            raise ValueError("DATAWELL_VECTOR_STORE=qdrant needs DATAWELL_QDRANT_URL")
        return QdrantVectorStore(embedder.dimension, url=settings.qdrant_url, space=embedder.space)
    folder = settings.data_dir / "vectors"
    if choice == "pgvector" or (choice == "auto" and rows.dialect == "postgresql"):
        why_not = await enable_pgvector(rows.engine) if rows.dialect == "postgresql" else "the rows are in SQLite"
        if choice == "pgvector" and why_not:
            raise ValueError(f"DATAWELL_VECTOR_STORE=pgvector, but the rows database cannot hold vectors: {why_not}")
        if not why_not:
            log.info("vectors: pgvector in the rows' PostgreSQL database")
            await convert_local_mode(settings.data_dir / "qdrant", folder, embedder.dimension)
            await move_to_pgvector(folder, rows.engine, build_memory_mb=settings.pgvector_build_memory_mb)
            store = PgVectorStore(
                rows.engine, embedder.dimension, space=embedder.space, build_memory_mb=settings.pgvector_build_memory_mb
            )
            await store.tell_if_unbuffered()
            return store
        log.info("vectors: the embedded index in %s, not pgvector in the rows' database: %s", folder, why_not)
    await convert_local_mode(settings.data_dir / "qdrant", folder, embedder.dimension)
    return EmbeddedVectorStore(embedder.dimension, folder, space=embedder.space)


def build_scheduler(settings: Settings) -> ModelScheduler:
    """The scheduler, with the embedded model's cost model when no hosted model is set (a
    hosted model's slots are its rate limit: any free one will do)."""
    slots = settings.resolved_model_slots
    rates = None
    if settings.model is None and settings.embedded_model_enabled:
        from datawell.llm import embedded  # litellm: imported here, as by `default_models`, not on import

        def observed_prefill_rate() -> float | None:
            """The model's prompt tokens read a second over its latest calls that read at least
            `PREFILL_SAMPLE_TOKENS` (None before any)."""
            if not embedded.is_registered():
                return None
            calls = [
                c for c in list(embedded.runtime().calls) if c.prompt_tokens - c.cached_tokens >= PREFILL_SAMPLE_TOKENS
            ]
            seconds = sum(c.prefill_seconds for c in calls)
            return sum(c.prompt_tokens - c.cached_tokens for c in calls) / seconds if seconds > 0 else None

        rates = Rates(
            prefill=settings.model_prefill_tokens_per_second,
            decode=settings.model_decode_tokens_per_second,
            prefix_tokens=settings.model_prefix_tokens,
            observed_prefill=observed_prefill_rate,
        )
    return ModelScheduler(
        Limits(slots=slots, queue=settings.model_queue, per_caller=settings.model_runs_per_user),
        listener=metrics.QueueMetrics(settings.model or "embedded"),
        book=SlotBook(slots, rates, shares=settings.embedded_model_share_prompts),
    )
