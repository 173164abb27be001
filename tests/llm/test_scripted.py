from __future__ import annotations

import pytest
from pydantic import BaseModel

from datawell.llm.scripted import ScriptedChatModel, ScriptExhausted


class Answer(BaseModel):
    value: int


async def test_structured_then_text_then_exhausted() -> None:
    model = ScriptedChatModel([Answer(value=3), lambda messages: f"echo {messages[-1].content}"])
    assert await model.with_structured_output(Answer).ainvoke("q1") == Answer(value=3)
    assert (await model.ainvoke("q2")).content == "echo q2"
    with pytest.raises(ScriptExhausted, match="no answer #3"):
        await model.ainvoke("q3")
    assert model.prompts() == ["q1", "q2", "q3"]
