"""The LLM judge behind `llm-judge` assertions. It runs only when a judge model is given
(`--judge-model`); otherwise those assertions are skipped and the report says how many."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from datawell.evals.scoring import JudgeVerdict
from datawell.prompts import PromptLibrary


class ModelJudge:
    def __init__(self, model: BaseChatModel, prompts: PromptLibrary) -> None:
        self.model = model
        self.prompts = prompts

    async def __call__(self, question: str, answer: str, rubric: str, reference: str) -> JudgeVerdict:
        messages = self.prompts.get("eval_judge").render(
            question=question, answer=answer, rubric=rubric, reference=reference
        )
        verdict = await self.model.with_structured_output(JudgeVerdict).ainvoke(messages)
        return JudgeVerdict.model_validate(verdict)
