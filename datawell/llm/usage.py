"""Token usage of one graph run, gathered from every model call in it.

Every chat model puts the provider's counts on each AIMessage's `usage_metadata` (streamed
answers on their last chunk). A graph run creates one `RunUsage` and passes it in the run's
config, `{"callbacks": [usage]}`; LangGraph hands callbacks down to every model call in the
run, so nodes need not do anything. After (or during) the run, `usage.total_tokens` and
`usage.by_model` say what was spent, and `check_budget` stops a run that went over."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.outputs import LLMResult

from datawell.errors import BudgetExceeded


class RunUsage(UsageMetadataCallbackHandler):
    """langchain-core's usage collector (totals per model name) plus a call count and a budget."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        with self._lock:
            self.calls += 1
        super().on_llm_end(response, **kwargs)

    @property
    def by_model(self) -> dict[str, dict[str, int]]:
        """Input, output and total tokens per model name."""
        return {
            name: {
                "input_tokens": usage.get("input_tokens", 0),
                "output_tokens": usage.get("output_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            }
            for name, usage in self.usage_metadata.items()
        }

    @property
    def input_tokens(self) -> int:
        return sum(u.get("input_tokens", 0) for u in self.usage_metadata.values())

    @property
    def output_tokens(self) -> int:
        return sum(u.get("output_tokens", 0) for u in self.usage_metadata.values())

    @property
    def total_tokens(self) -> int:
        return sum(u.get("total_tokens", 0) for u in self.usage_metadata.values())

    def check_budget(self, max_tokens: int) -> None:
        """Raise `BudgetExceeded` once the run has spent more than `max_tokens` (settings'
        `max_tokens_per_run`); graphs call it between steps."""
        if self.total_tokens > max_tokens:
            raise BudgetExceeded(
                f"the run used {self.total_tokens} tokens, more than its budget of {max_tokens}",
                detail=", ".join(f"{name}: {u['total_tokens']}" for name, u in self.by_model.items()),
            )
