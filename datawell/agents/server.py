"""The A2A runtime behind the routes: per registered agent, a task store, a request handler
and a JSON-RPC dispatcher from a2a-sdk.

- The caller is authenticated by the route (`datawell.api.a2a`); `CallerContextBuilder`
  hands the Datawell user and the app's `Runs` to the executors through the SDK's call
  context, and names the task owner so each user sees only their own tasks.
- `AgentRequestHandler` starts the run (`GraphExecutor.prepare`: every check) before the SDK
  creates a task, so a bad request is a JSON-RPC error and leaves no task behind.
- The agents are stateless over A2A (SPEC.md): `RunningTaskStore` keeps a task only while it
  runs, so GetTask finds running tasks and nothing else; CancelTask of a running task ends
  it CANCELED and stops its run (`GraphExecutor.cancel`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable

from a2a.auth.user import User as A2AUser
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCard, CancelTaskRequest, Message, SendMessageRequest, Task, TaskState
from starlette.requests import Request
from starlette.responses import Response

from datawell.agents.cards import agent_card
from datawell.agents.executor import GraphExecutor
from datawell.agents.registry import AGENTS, AgentSpec
from datawell.agents.requests import PREPARED, RUNS, USER

FINISHED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


BASE_URL = "datawell.base_url"  # ServerCallContext.state key: the address the caller used


class Caller(A2AUser):
    def __init__(self, username: str) -> None:
        self._username = username

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._username


class CallerContextBuilder(DefaultServerCallContextBuilder):
    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[RUNS] = request.state.runs
        context.state[USER] = request.scope["user"]
        context.state[BASE_URL] = request.state.public_base_url  # set by the route (datawell.api.a2a)
        return context

    def build_user(self, request: Request) -> A2AUser:
        return Caller(request.scope["user"].username)


class RunningTaskStore(InMemoryTaskStore):
    """Forgets a task once it finishes: nothing asks for it again, and memory stays flat.
    A task being canceled is kept until CancelTask has read its CANCELED state back."""

    def __init__(self) -> None:
        super().__init__()
        self.canceling: set[str] = set()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        if task.status.state in FINISHED and task.id not in self.canceling:
            await self.delete(task.id, context)
        else:
            await super().save(task, context)


class AgentRequestHandler(DefaultRequestHandler):
    agent_executor: GraphExecutor
    running: RunningTaskStore

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Message | Task:
        context.state[PREPARED] = await self.agent_executor.prepare(params, context)
        return await super().on_message_send(params, context)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        context.state[PREPARED] = await self.agent_executor.prepare(params, context)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        self.running.canceling.add(params.id)
        try:
            return await super().on_cancel_task(params, context)
        finally:
            self.running.canceling.discard(params.id)
            task = await self.running.get(params.id, context)
            if task is not None and task.status.state in FINISHED:
                await self.running.delete(params.id, context)


def extended_card_for(spec: AgentSpec) -> Callable[[AgentCard, ServerCallContext], Awaitable[AgentCard]]:
    """GetExtendedAgentCard's card, with URLs on the address the caller used."""

    async def modify(_card: AgentCard, context: ServerCallContext) -> AgentCard:
        return agent_card(spec, context.state[BASE_URL], extended=True)

    return modify


class AgentServer:
    """One handler and dispatcher per agent of the registry. The handler's own card only
    serves the SDK's capability checks; every card a client sees is built per request."""

    def __init__(self) -> None:
        self.handlers: dict[str, AgentRequestHandler] = {}
        self.dispatchers: dict[str, JsonRpcDispatcher] = {}
        for spec in AGENTS:
            store = RunningTaskStore()
            handler = AgentRequestHandler(
                agent_executor=spec.executor(store),
                task_store=store,
                agent_card=agent_card(spec, ""),
                extended_agent_card=agent_card(spec, "", extended=True),
                extended_card_modifier=extended_card_for(spec),
            )
            handler.running = store
            self.handlers[spec.name] = handler
            self.dispatchers[spec.name] = JsonRpcDispatcher(handler, context_builder=CallerContextBuilder())

    async def handle(self, agent: str, request: Request) -> Response:
        return await self.dispatchers[agent].handle_requests(request)

    async def aclose(self) -> None:
        for handler in self.handlers.values():
            await handler.aclose()
