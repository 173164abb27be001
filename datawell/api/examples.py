"""Verified examples: question → query pairs per namespace that users vouch for. The query
writer takes the most similar as few-shot examples, and a question matching one exactly runs
its query with no model call (`datawell.tools.examples`). Reading needs read access to the
namespace, adding, deleting and marking need write access; every query is checked as the
caller before it is stored."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from starlette.requests import Request

from datawell.api.routing import (
    READABLE_NAMESPACE,
    WRITABLE_NAMESPACE,
    Context,
    NamespacePath,
    Router,
    uuid_in_path,
)
from datawell.api.schemas import ApiModel, WholeNumber
from datawell.client.models import Example as ExampleResponse
from datawell.client.models import ExampleList
from datawell.client.models import Mark as MarkResponse
from datawell.errors import InvalidInput, NotFound, SubError
from datawell.graphs.memory import finished_turn
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, namespace_by_id, require
from datawell.storage.examples import (
    MAX_QUESTION,
    Source,
    add_example,
    find_example,
    get_example,
    list_examples,
    remove_pair,
)
from datawell.storage.tables import Conversation, User, VerifiedExample
from datawell.storage.users import usernames

router = Router("examples")

MAX_QUERY = 20000
NAMESPACE_PATH = "/examples/{username}/{namespace}"


class ExampleCreateRequest(ApiModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION, pattern=r"\S", description="The question")
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY,
        pattern=r"\S",
        description="The query that answers it, in Datawell's query language; checked as the caller before it is stored",
    )


def example_response(example: VerifiedExample, namespace: NamespaceRef, created_by: str) -> ExampleResponse:
    return ExampleResponse(
        id=example.id,
        owner=namespace.owner,
        namespace=namespace.name,
        question=example.question,
        query=example.query,
        source=Source(example.source).value,
        conversation_id=example.conversation_id,
        step=example.step,
        created_by=created_by,
        created_at=example.created_at,
    )


class MarkRequest(ApiModel):
    conversation_id: str = Field(min_length=1, max_length=36, description="The caller's conversation (autorag)")
    step: WholeNumber = Field(ge=1, le=1000, description="The step's index (1-based), as in the `step` event")
    turn: WholeNumber = Field(0, ge=0, description="The turn (1-based) of the conversation; 0 or omitted: the latest")
    verdict: Literal["good", "bad"] = Field(
        description="`good` stores the step's question and query as a verified example; "
        "`bad` removes the example pairing them, if there is one"
    )
    question: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_QUESTION,
        pattern=r"\S",
        description="The question to store the query under; default: the turn's question when the "
        "turn had one step, else the step's instruction",
    )


class ExamplePath(NamespacePath):
    example_id: Annotated[str, uuid_in_path("example")]


@router.post(
    NAMESPACE_PATH, ExampleResponse, body=ExampleCreateRequest, status=201, errors=(409,), resolve=WRITABLE_NAMESPACE
)
async def add(
    request: Request, ctx: Context, user: User, body: ExampleCreateRequest, namespace: NamespaceRef
) -> ExampleResponse:
    """Add a verified example

    Stores a question and the query that answers it. The query is checked as the caller
    first: one the caller could not run is refused (422 QUERY_ERROR). One example per question
    (compared ignoring case, spacing and trailing punctuation): 409 when there is one."""
    services = ctx.services
    await services.query_tools.check(user, namespace, body.query)
    async with services.db.session() as session:
        example = await add_example(session, namespace, user, body.question, body.query)
        return example_response(example, namespace, user.username)


@router.get(NAMESPACE_PATH, ExampleList, resolve=READABLE_NAMESPACE)
async def list_all(request: Request, ctx: Context, user: User, namespace: NamespaceRef) -> ExampleList:
    """List verified examples

    Lists the namespace's verified examples, newest first."""
    async with ctx.services.db.read() as session:
        examples = await list_examples(session, namespace)
        names = await usernames(session, {e.created_by for e in examples})
    return ExampleList(data=[example_response(e, namespace, names.get(e.created_by, "")) for e in examples])


@router.post("/examples/marks", MarkResponse, body=MarkRequest, errors=(403, 404, 409))
async def mark(request: Request, ctx: Context, user: User, body: MarkRequest) -> MarkResponse:
    """Mark a conversation step's answer good or bad

    Marks the query of one step of the caller's conversation (`POST /query/autorag`), in the
    conversation's namespace, which the caller must be able to write. `good` checks the query as
    the caller and stores the step's question and query as a verified example (marking the same
    pair again answers the stored one; another query for the question is 409). `bad` removes the
    example pairing that question and query, so the answer is never offered again as verified."""
    services = ctx.services
    async with services.db.session() as session:
        conversation = await session.get(Conversation, body.conversation_id)
        # Another user's conversation is reported exactly like a missing one.
        if conversation is None or conversation.user_id != user.id or conversation.namespace_id is None:
            raise NotFound(f"conversation {body.conversation_id} does not exist")
        namespace = await namespace_by_id(session, conversation.namespace_id)
        await require(session, user, namespace, Permission.WRITE)
    question, query = await marked_pair(services, body)
    if body.verdict == "bad":
        async with services.db.session() as session:
            removed = await remove_pair(session, namespace, question, query)
        return MarkResponse(verdict="bad", question=question, query=query, example=None, removed=removed)
    await services.query_tools.check(user, namespace, query)
    async with services.db.session() as session:
        example = await find_example(session, namespace, question)
        if example is None or example.query != query:
            example = await add_example(
                session,
                namespace,
                user,
                question,
                query,
                source=Source.CONVERSATION,
                conversation_id=body.conversation_id,
                step=body.step,
            )
        names = await usernames(session, {example.created_by})
        stored = example_response(example, namespace, names.get(example.created_by, ""))
    return MarkResponse(verdict="good", question=question, query=query, example=stored, removed=0)


@router.delete(NAMESPACE_PATH + "/{exampleId}", status=204, params=ExamplePath, resolve=WRITABLE_NAMESPACE)
async def delete(request: Request, ctx: Context, user: User, path: ExamplePath, namespace: NamespaceRef) -> None:
    """Delete a verified example

    Deletes one verified example of the namespace."""
    async with ctx.services.db.session() as session:
        await session.delete(await get_example(session, namespace, path.example_id))


async def marked_pair(services: Services, body: MarkRequest) -> tuple[str, str]:
    """The question and query a mark is about, from the conversation's checkpointed turn."""
    state = await finished_turn(services.memory, body.conversation_id, body.turn or None)
    if state is None:
        raise NotFound(f"conversation {body.conversation_id} has no finished turn {body.turn or ''}".rstrip())
    results: list[dict[str, Any]] = state.get("results", [])
    step = next((r for r in results if r.get("index") == body.step), None)
    if step is None:
        raise NotFound(f"the turn has no step {body.step} (it has {len(results)})")
    if step.get("kind", "data") != "data" or not step.get("query") or step.get("error"):
        raise InvalidInput(
            "only a step whose query ran can be marked",
            sub_errors=[SubError("no_query", f"step: step {body.step} ran no query")],
        )
    question = body.question or (state.get("question", "") if len(results) == 1 else step.get("instruction", ""))
    if not question.strip() or len(question) > MAX_QUESTION:
        raise InvalidInput(
            "give the question to store the query under",
            sub_errors=[
                SubError("question", f"question: the step's question is empty or over {MAX_QUESTION} characters")
            ],
        )
    return question.strip(), str(step["query"]).strip()
