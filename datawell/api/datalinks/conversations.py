"""The DataLinks SDK's conversations: `/query/conversations` lists the caller's conversations
and reads one with its turns."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field
from sqlalchemy import select
from starlette.requests import Request

from datawell.api.routing import Context, PathModel, Router, named_user
from datawell.api.schemas import ApiModel
from datawell.errors import NotFound
from datawell.graphs.memory import finished_turn
from datawell.services import Services
from datawell.storage.access import Permission, authorize
from datawell.storage.tables import Conversation, User
from datawell.storage.users import SELF

router = Router("datalinks")


class ConversationsQuery(ApiModel):
    username: str = SELF
    namespace: str | None = None


class ConversationSummary(ApiModel):
    id: str
    title: str
    created_at: int = Field(description="Epoch milliseconds.")
    updated_at: int = Field(description="Epoch milliseconds.")


class ConversationList(ApiModel):
    conversations: list[ConversationSummary]


class ConversationTurn(ApiModel):
    run_id: str = Field(description="The turn's id (derived from the conversation and the turn's number).")
    question: str
    status: str
    result: dict[str, Any] | None = None


class ConversationPath(PathModel):
    conversation_id: str


class ConversationDetail(ApiModel):
    id: str
    title: str
    turns: list[ConversationTurn]


def millis(conversation: Conversation, which: str) -> int:
    return int(getattr(conversation, which).timestamp() * 1000)


@router.get("/query/conversations", ConversationList, query=ConversationsQuery, errors=(403, 404))
async def conversations(request: Request, ctx: Context, user: User, query: ConversationsQuery) -> ConversationList:
    """The caller's conversations

    The caller's conversations in a namespace (all of them without one), latest first."""
    async with ctx.services.db.session() as session:
        statement = select(Conversation).where(Conversation.user_id == user.id)
        if query.namespace:
            ns = await authorize(session, user, named_user(query.username, user), query.namespace, Permission.READ)
            statement = statement.where(Conversation.namespace_id == ns.id)
        found = (await session.execute(statement.order_by(Conversation.updated_at.desc()))).scalars().all()
    return ConversationList(
        conversations=[
            ConversationSummary(
                id=c.id, title=c.title, created_at=millis(c, "created_at"), updated_at=millis(c, "updated_at")
            )
            for c in found
        ]
    )


@router.get("/query/conversations/{conversationId}", ConversationDetail, errors=(404,), params=ConversationPath)
async def conversation(request: Request, ctx: Context, user: User, path: ConversationPath) -> ConversationDetail:
    """A conversation and its turns

    The caller's conversation with its finished turns, oldest first."""
    services: Services = ctx.services
    conversation_id = path.conversation_id
    async with services.db.session() as session:
        found = await session.get(Conversation, conversation_id)
    if found is None or found.user_id != user.id:
        raise NotFound(f"conversation {conversation_id} does not exist")
    values = await finished_turn(services.memory, found.id, None) or {}
    turns = [
        ConversationTurn(
            run_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"datawell:conversation:{found.id}:{number}")),
            question=turn["question"],
            status="completed",
            result={"response": turn["answer"], "steps": []},
        )
        for number, turn in enumerate(values.get("turns", []), 1)
    ]
    return ConversationDetail(id=found.id, title=found.title, turns=turns)
