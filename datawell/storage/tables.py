"""Metadata tables. Dataset rows live in one table per dataset (see `storage.rows`).

Every table the product needs is declared here, so the first migration creates the
whole schema and later work adds columns through new revisions."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on every backend (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), dict[str, Any]: JSON, list[Any]: JSON}


class User(Base):
    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Token(Base):
    __tablename__ = "tokens"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    description: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)


class Namespace(Base):
    __tablename__ = "namespaces"
    __table_args__ = (UniqueConstraint("owner_id", "name"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Grant(Base):
    __tablename__ = "grants"
    __table_args__ = (UniqueConstraint("namespace_id", "user_id"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    namespace_id: Mapped[str] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    permission: Mapped[str] = mapped_column(String(8))  # "read" | "write"
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("namespace_id", "name"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    namespace_id: Mapped[str] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, default="")
    # field name -> description, in the order the user gave them
    schema_definition: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # field name -> one of integer, real, text, boolean, timestamp; filled by ingestion
    field_types: Mapped[dict[str, Any]] = mapped_column(default=dict)
    table_name: Mapped[str] = mapped_column(String(64), unique=True)
    created_by: Mapped[str] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class DatasetHints(Base):
    """The value hints of a dataset's columns (`storage.hints`), refreshed when its rows change."""

    __tablename__ = "column_hints"
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True)
    hints: Mapped[dict[str, Any]]
    # When the computation began: a slower refresh that read older rows never overwrites a newer one.
    computed_at: Mapped[datetime]


class BuildSpec(Base):
    __tablename__ = "build_specs"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    sources: Mapped[list[Any]] = mapped_column(default=list)
    destination: Mapped[dict[str, Any]] = mapped_column(default=dict)
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class Upload(Base):
    __tablename__ = "uploads"
    id: Mapped[str] = mapped_column(String(200), primary_key=True)  # the uploadId
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(512))
    filename: Mapped[str] = mapped_column(String(512))
    size: Mapped[int] = mapped_column(BigInteger)
    part_size: Mapped[int] = mapped_column(BigInteger)
    part_count: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="OPEN")  # OPEN, COMPLETING, COMPLETED, ABORTED
    created_by: Mapped[str] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    # When `status` last changed: a COMPLETING upload whose process died is retaken after a lease.
    status_changed_at: Mapped[datetime] = mapped_column(default=utcnow)


class Ingestion(Base):
    __tablename__ = "ingestions"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    object_key: Mapped[str] = mapped_column(String(512))
    name: Mapped[str] = mapped_column(String(512))
    status: Mapped[str] = mapped_column(String(16), default="QUEUED")
    status_message: Mapped[str] = mapped_column(Text, default="")
    expected_total_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    processed_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    processed_rows: Mapped[int] = mapped_column(BigInteger, default=0)
    original_ingestion_id: Mapped[str | None] = mapped_column(String(36), default=None)
    last_retry_at: Mapped[datetime | None] = mapped_column(default=None)
    seen_at: Mapped[datetime] = mapped_column(default=utcnow)
    # how source columns were mapped onto the schema, recorded for the user
    mapping: Mapped[dict[str, Any]] = mapped_column(default=dict)
    claimed_by: Mapped[str | None] = mapped_column(String(128), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    created_by: Mapped[str] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Link(Base):
    __tablename__ = "links"
    # origin/destination name the namespace but not its owner, so they are unique per namespace only
    __table_args__ = (UniqueConstraint("namespace_id", "origin", "destination", name="uq_links_namespace_link"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    namespace_id: Mapped[str] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    origin_dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    destination_dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    origin: Mapped[str] = mapped_column(String(400))  # namespace/dataset.field
    destination: Mapped[str] = mapped_column(String(400))
    hits: Mapped[int] = mapped_column(BigInteger, default=0)
    match_type: Mapped[str] = mapped_column(String(32))
    score: Mapped[float] = mapped_column(default=0.0)
    status: Mapped[str] = mapped_column(String(16), default="Suggested")  # Suggested | Active
    reason: Mapped[str] = mapped_column(Text, default="")
    curated_by: Mapped[str | None] = mapped_column(ForeignKey("users.id"), default=None)
    model: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class LinkVersion(Base):
    """A counter per namespace, bumped by every change to its links: processes that cache the
    namespace's link graph compare it to know when to rebuild (`ontology.graph`)."""

    __tablename__ = "link_versions"
    namespace_id: Mapped[str] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, default=0)


class Conversation(Base):
    """Index of conversations; their content lives in the LangGraph checkpointer (thread id = id)."""

    __tablename__ = "conversations"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    namespace_id: Mapped[str | None] = mapped_column(ForeignKey("namespaces.id", ondelete="SET NULL"), default=None)
    title: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class AgentRun(Base):
    """One assistant run (a conversation's turn, from any surface): what was asked, how it
    ended, the tokens it spent and the caller's rating (the DataLinks SDK's agent runs)."""

    __tablename__ = "agent_runs"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    conversation_id: Mapped[str | None] = mapped_column(String(36), default=None, index=True)
    question: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default="running")  # running | completed | failed
    result: Mapped[dict[str, Any] | None] = mapped_column(default=None)  # {response, steps} once completed
    error_message: Mapped[str | None] = mapped_column(Text, default=None)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    thumbs_up: Mapped[bool | None] = mapped_column(default=None)
    comment: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class VerifiedExample(Base):
    """A question and the query a user verified answers it, kept per namespace as few-shot
    examples for the query writer and for answering the same question with no model call."""

    __tablename__ = "verified_examples"
    __table_args__ = (Index("ix_verified_examples_question", "namespace_id", "question_key", unique=True),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    namespace_id: Mapped[str] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"))
    question: Mapped[str] = mapped_column(Text)
    # The question normalised (case, spacing, trailing punctuation): what an exact match compares.
    question_key: Mapped[str] = mapped_column(String(512))
    query: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(16))  # "manual" | "conversation"
    conversation_id: Mapped[str | None] = mapped_column(String(36), default=None)
    step: Mapped[int | None] = mapped_column(Integer, default=None)  # 1-based, with conversation_id
    created_by: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RunRow(Base):
    """A recorded graph run (the run viewer): the columns its list filters on, and the whole
    record (`datawell.client.run_records.RunRecord`) as JSON. Kept `run_retention_days`."""

    __tablename__ = "run_records"
    __table_args__ = (Index("ix_run_records_user_started", "user_id", "started_at"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    namespace_id: Mapped[str | None] = mapped_column(
        ForeignKey("namespaces.id", ondelete="SET NULL"), default=None, index=True
    )
    graph: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(index=True)
    seconds: Mapped[float] = mapped_column(Float)  # as migration 0007 made it
    question: Mapped[str] = mapped_column(String(200), default="")
    record: Mapped[dict[str, Any]]
