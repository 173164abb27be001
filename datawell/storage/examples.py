"""Verified examples: per namespace, questions and the queries users verified answer them.
One example per question: questions are compared normalised (`question_key`), so "How many
orders?" and "how many  orders" are the same question."""

from __future__ import annotations

import re
from enum import StrEnum

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Conflict, NotFound
from datawell.storage.access import NamespaceRef
from datawell.storage.tables import User, VerifiedExample

MAX_QUESTION = 500  # characters; the normalised question is an indexed column
# The most examples a namespace's similarity search compares; the newest are kept.
MAX_COMPARED = 1000


class Source(StrEnum):
    MANUAL = "manual"  # added by hand (REST, CLI)
    CONVERSATION = "conversation"  # a conversation step marked good


def question_key(question: str) -> str:
    """The question as exact matches compare it: case folded, spaces collapsed, trailing
    punctuation dropped."""
    return re.sub(r"\s+", " ", question.casefold()).strip().rstrip("?!.;:,… ").strip()


async def find_example(session: AsyncSession, namespace: NamespaceRef, question: str) -> VerifiedExample | None:
    """The namespace's example for this question, compared normalised."""
    return (
        await session.execute(
            select(VerifiedExample).where(
                VerifiedExample.namespace_id == namespace.id, VerifiedExample.question_key == question_key(question)
            )
        )
    ).scalar_one_or_none()


async def add_example(
    session: AsyncSession,
    namespace: NamespaceRef,
    user: User,
    question: str,
    query: str,
    *,
    source: Source = Source.MANUAL,
    conversation_id: str | None = None,
    step: int | None = None,
) -> VerifiedExample:
    """Store a checked pair; 409 when the namespace already has an example for the question."""
    existing = await find_example(session, namespace, question)
    if existing is not None:
        raise Conflict(
            f"namespace {namespace} already has verified example {existing.id} for this question; delete it first"
        )
    example = VerifiedExample(
        namespace_id=namespace.id,
        question=question.strip(),
        question_key=question_key(question),
        query=query.strip(),
        source=source.value,
        conversation_id=conversation_id,
        step=step,
        created_by=user.id,
    )
    session.add(example)
    await session.flush()
    return example


async def list_examples(session: AsyncSession, namespace: NamespaceRef) -> list[VerifiedExample]:
    """The namespace's examples, newest first (at most MAX_COMPARED)."""
    rows = await session.execute(
        select(VerifiedExample)
        .where(VerifiedExample.namespace_id == namespace.id)
        .order_by(VerifiedExample.created_at.desc(), VerifiedExample.id)
        .limit(MAX_COMPARED)
    )
    return list(rows.scalars())


async def get_example(session: AsyncSession, namespace: NamespaceRef, example_id: str) -> VerifiedExample:
    example = await session.get(VerifiedExample, example_id)
    if example is None or example.namespace_id != namespace.id:
        raise NotFound(f"verified example {example_id} does not exist in namespace {namespace}")
    return example


async def remove_pair(session: AsyncSession, namespace: NamespaceRef, question: str, query: str) -> int:
    """Remove the example pairing exactly this question and query (an answer marked bad);
    the number removed (0 or 1)."""
    result = await session.execute(
        delete(VerifiedExample).where(
            VerifiedExample.namespace_id == namespace.id,
            VerifiedExample.question_key == question_key(question),
            VerifiedExample.query == query.strip(),
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)
