"""The scripted oracle: a chat model that answers each suite question with the suite's own
gold values, for plumbing runs (`datawell eval run SUITE --scripted`) where no real model
is available. A graph driven by it should score 100%; less means broken plumbing (fixtures,
gold queries, the graph, the scoring), not a weak prompt.

It finds the case by the question text in the prompt. When a graph asks for structured
output, langchain binds the pydantic class as the only tool; the oracle keeps that class
and fills it from the gold values by field name and type (a `query`/`sql` field gets the
gold query, `answer`/`text` the gold answer, `steps` the gold plan, a refusal flag or a
refusal variant when the case must be refused, and so on). Without a bound class it
answers in plain text."""

from __future__ import annotations

import re
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from datawell.evals.suites import GoldLink, GoldStep, Suite
from datawell.llm.scripted import ReplyingChatModel, as_message

REFUSAL_ANSWER = "I cannot answer that from the data in this namespace."
_REFUSE = re.compile(r"refus|cannot|can_not|unanswerable|decline|invalid|reject|impossible|out_of_scope", re.I)
_OK = re.compile(r"^(answerable|can_answer|ok|success|possible|valid|is_answerable)$", re.I)
_QUERY = re.compile(r"query|sql|statement", re.I)
_ANSWER = re.compile(r"answer|response|text|content|message|summary|final", re.I)
_REASON = re.compile(r"reason|explanation|thought|rationale|why|comment|note", re.I)
_STEPS = re.compile(r"steps|plan|instructions", re.I)
_INSTRUCTION = re.compile(r"instruction|task|description|goal", re.I)
_LINKS = re.compile(r"links|selected|selection|matches|chosen", re.I)
# A link candidate as the curator lists it: `L3 [ExactMatch] ns/orders.sku -> ns/products.sku`.
_CANDIDATE = re.compile(r"^\s*(\w+) \[\w+\] (\S+/\S+\.\S+) -> (\S+/\S+\.\S+)", re.M)


class OracleError(AssertionError):
    pass


@dataclass(frozen=True)
class Gold:
    question: str
    query: str | None = None
    answer: str | None = None
    refuse: bool = False
    steps: list[GoldStep] = field(default_factory=list)
    links: list[GoldLink] = field(default_factory=list)

    def plan(self) -> list[GoldStep]:
        if self.steps:
            return self.steps
        return [GoldStep(instruction=self.question, query=self.query)] if self.query else []


def gold_answers(suite: Suite) -> list[Gold]:
    return [
        Gold(
            question=case.vars.question,
            query=case.expected.query,
            answer=case.expected.answer,
            refuse=case.expected.refuse,
            steps=case.expected.steps,
            links=case.expected.links,
        )
        for case in suite.cases
    ]


def candidate_labels(text: str) -> dict[frozenset[str], str]:
    """Labels of the link candidates listed in a curator prompt, by their (unordered) ends."""
    return {frozenset((origin, destination)): label for label, origin, destination in _CANDIDATE.findall(text)}


def _text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


def _plain(annotation: Any) -> tuple[Any, bool]:
    """The annotation without `| None`, and whether None was allowed."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(args) < len(get_args(annotation))
        if len(args) == 1:
            return args[0], optional
        return Union[tuple(args)], optional  # noqa: UP007 - rebuilding a union from its parts
    return annotation, False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


@dataclass
class Filler:
    """Fills a structured-output class from one case's gold values."""

    gold: Gold
    step: GoldStep | None
    labels: dict[frozenset[str], str] = field(default_factory=dict)  # curator: candidate labels

    def model(self, cls: type[BaseModel], step: GoldStep | None = None, link: GoldLink | None = None) -> BaseModel:
        values = {}
        for name, info in cls.model_fields.items():
            value = self.value(name, info.annotation, info, step or self.step, link)
            if value is not _DEFAULT:
                values[info.alias or name] = value
        return cls.model_validate(values)

    def value(
        self, name: str, annotation: Any, info: FieldInfo | None, step: GoldStep | None, link: GoldLink | None
    ) -> Any:
        kind, optional = _plain(annotation)
        refuse = self.gold.refuse
        has_default = info is not None and not info.is_required()
        if get_origin(kind) in (Union, types.UnionType):
            options = [a for a in get_args(kind) if _is_model(a)]
            if options:
                chosen = [o for o in options if bool(_REFUSE.search(o.__name__)) == refuse] or options
                return self.model(chosen[0], step, link)
            kind = get_args(kind)[0]
        if get_origin(kind) is Literal:
            choices = list(get_args(kind))
            wanted = [c for c in choices if bool(_REFUSE.search(str(c))) == refuse]
            return (wanted or choices)[0]
        if kind is bool:
            if _REFUSE.search(name):
                return refuse
            if _OK.match(name):
                return not refuse
            return _DEFAULT if has_default else False
        if kind is str:
            return self.text(name, step, link, optional, has_default)
        if get_origin(kind) is list:
            (item,) = get_args(kind) or (str,)
            return self.items(name, item, link)
        if _is_model(kind):
            return self.model(kind, step, link)
        if kind in (int, float):
            return _DEFAULT if has_default else 0
        return _DEFAULT if has_default else None

    def text(self, name: str, step: GoldStep | None, link: GoldLink | None, optional: bool, has_default: bool) -> Any:
        refuse = self.gold.refuse
        if link is not None and name in ("origin", "destination"):
            return getattr(link, name)
        if link is not None and re.search("match", name, re.I):
            return link.match_type or "ExactMatch"
        if link is not None and re.fullmatch(r"id|label|candidate(_id)?", name, re.I):
            return self.labels.get(frozenset((link.origin, link.destination)), "")
        if _REFUSE.search(name):
            return REFUSAL_ANSWER if refuse else (None if optional else "")
        if _QUERY.search(name):
            query = step.query if step else self.gold.query
            return None if refuse and optional else (query or "")
        if _REASON.search(name):
            return "scripted oracle: the suite's gold value"
        if _INSTRUCTION.search(name):
            return step.instruction if step else self.gold.question
        if _ANSWER.search(name):
            return plain_answer(self.gold)
        return _DEFAULT if has_default else ""

    def items(self, name: str, item: Any, link: GoldLink | None) -> Any:
        if _STEPS.search(name):
            plan = self.gold.plan() or [GoldStep(instruction=self.gold.question, query="")]
            if item is str:
                return [s.instruction for s in plan]
            if _is_model(item):
                return [self.model(item, step=s) for s in plan]
        if _LINKS.search(name) and _is_model(item):
            listed = [g for g in self.gold.links if frozenset((g.origin, g.destination)) in self.labels]
            return [self.model(item, link=g) for g in (listed if self.labels else self.gold.links)]
        return []


_DEFAULT = object()


def plain_answer(gold: Gold) -> str:
    if gold.answer:
        return gold.answer
    if gold.refuse:
        return REFUSAL_ANSWER
    return f"```sql\n{gold.query}\n```" if gold.query else ""


class OracleChatModel(ReplyingChatModel):
    answers: list[Any]
    schema_: Any = None  # the structured-output class bound through bind_tools

    @property
    def _llm_type(self) -> str:
        return "eval-oracle"

    def find(self, messages: Sequence[BaseMessage]) -> Gold:
        """The case whose question the prompt contains (when several do, of those no other
        holds, the one asked last: examples from other databases come before the question);
        for the curator, the case whose namespace the listed candidates are in."""
        text = _text(messages)
        found = [g for g in self.answers if g.question and g.question in text]
        listed = {end.split("/", 1)[0] for pair in candidate_labels(text) for end in pair}
        found = found or [g for g in self.answers if g.links and g.links[0].origin.split("/", 1)[0] in listed]
        if not found:
            raise OracleError(f"the scripted oracle found no suite question in the prompt: {text[-300:]!r}")
        outermost = [g for g in found if not any(g.question in o.question and g is not o for o in found)]
        return max(outermost or found, key=lambda g: (text.rfind(g.question), len(g.question)))

    def _step(self, gold: Gold, messages: Sequence[BaseMessage]) -> GoldStep | None:
        """The plan step this call is about: the one whose instruction the last message names."""
        plan = gold.plan()
        if len(plan) <= 1:
            return plan[0] if plan else None
        # The step's own instruction is the last one the prompt names (earlier steps' results
        # may come before it as context).
        last = str(messages[-1].content) if messages else ""
        named = [s for s in plan if s.instruction in last]
        return max(named, key=lambda s: last.rfind(s.instruction)) if named else plan[0]

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        gold = self.find(messages)
        if self.schema_ is None:
            return AIMessage(content=plain_answer(gold))
        filler = Filler(gold, self._step(gold, messages), candidate_labels(_text(messages)))
        return as_message(filler.model(self.schema_))

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        schema = tools[0] if len(tools) == 1 and _is_model(tools[0]) else None
        return self.model_copy(update={"schema_": schema})


def oracle_for(suite: Suite) -> OracleChatModel:
    return OracleChatModel(answers=gold_answers(suite))
