"""The prompt every stage starts with.

Each stage (plan, query, repair, answer) sends the same system message for a namespace: the
shared rules, the catalog and its joins (the `namespace` prompt). Only after it come the
stage's own task and the question, as the user message. The embedded model's server keeps
the evaluated prompt of its last requests, so a stage that starts with the same bytes as
the one before skips re-reading them: the plan pays for the prefix once per namespace and
the query, repair and answer calls after it read only their own few lines."""

from __future__ import annotations

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
