"""The prompt every stage starts with.

Each stage (plan, query, repair, answer) sends the same system message for a namespace: the
shared rules, the catalog and its joins (the `namespace` prompt). Only after it come the
stage's own task and the question, as the user message. The embedded model's server keeps
the evaluated prompt of its last requests, so a stage that starts with the same bytes as
the one before skips re-reading them: the plan pays for the prefix once per namespace and
the query, repair and answer calls after it read only their own few lines."""

from __future__ import annotations

import hashlib

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from datawell.prompts import PromptLibrary

PREFIX_PROMPT = "namespace"


def stage_messages(
    prompts: PromptLibrary,
    stage_prompt: str,
    *,
    namespace: str,
    dialect: str,
    catalog: str,
    links: str,
    **values: object,
) -> list[BaseMessage]:
    """The namespace's shared prefix as the system message, then the stage's prompt.

    The prefix names its namespace in its first words, so two namespaces' prompts part at
    once: the embedded model's server then keeps each namespace's prompt apart in its cache
    instead of reusing a sequence that holds another namespace's (docs/decisions.md, issue 29)."""
    prefix = prompts.get(PREFIX_PROMPT).text(namespace=namespace, dialect=dialect, catalog=catalog, links=links)
    return [SystemMessage(prefix), HumanMessage(prompts.get(stage_prompt).text(**values))]


def prefix_key(prompts: PromptLibrary, namespace_id: str) -> str:
    """What the model scheduler knows a run's prefix by (`datawell.slots`): its namespace and
    the prefix prompt's version. The catalog is not read for it (a run is scheduled before it
    reads anything); a changed catalog makes the next question read its prefix again, which
    the scheduler then counts as a hit it did not get."""
    prompt = prompts.get(PREFIX_PROMPT)
    version = hashlib.sha256(prompt.user.template.encode()).hexdigest()[:12]
    return f"{namespace_id}:{version}"
