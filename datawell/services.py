"""The service objects every request handler, worker and command shares, built once by
`datawell.app.build_services` and handed down explicitly."""

from __future__ import annotations

from dataclasses import dataclass

from datawell.api.auth import TokenAuthority
from datawell.config import Settings
from datawell.graphs.memory import ConversationMemory
from datawell.llm.embeddings import Embedder
from datawell.llm.models import ChatModels
from datawell.prompts import PromptLibrary
from datawell.storage.db import Database
from datawell.storage.objects import ObjectStore
from datawell.storage.rows import RowStore
from datawell.storage.vectors import VectorStore
from datawell.tools.ql import QueryTools


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
    memory: ConversationMemory  # the assistant's conversations (LangGraph checkpointer)

    async def close(self) -> None:
        await self.memory.close()
        await self.query_tools.close()
        await self.vectors.close()
        await self.rows.close()
        await self.db.close()
