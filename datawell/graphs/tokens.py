"""Token accounting for the run budget (`max_tokens_per_run`).

Providers report usage on the reply (`usage_metadata`); when one does not (the scripted
test model, some local servers), the count is estimated at four characters a token, the
usual rule of thumb for English and SQL, so a budget still stops a runaway run."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

CHARS_PER_TOKEN = 4


def estimate(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def prompt_tokens(prompt: Sequence[BaseMessage]) -> int:
    """An estimate of a prompt's tokens, for checking a budget before the call is made."""
    return sum(estimate(str(m.content)) for m in prompt)


def used(prompt: Sequence[BaseMessage], reply: BaseMessage | None, reply_text: str = "") -> int:
    """Tokens one model call spent: the reply's reported usage, else an estimate of both sides."""
    usage = getattr(reply, "usage_metadata", None)
    if usage and usage.get("total_tokens"):
        return int(usage["total_tokens"])
    sent = prompt_tokens(prompt)
    if reply is not None and not reply_text:
        reply_text = str(reply.content) + "".join(str(c.get("args", "")) for c in getattr(reply, "tool_calls", []))
    return sent + estimate(reply_text)
