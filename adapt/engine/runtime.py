"""The per-task runtime: node bookkeeping, event emission, budgets, cancellation and the one
place where LLM calls happen (so every call is checked, timed, priced and recorded)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from adapt.engine.approvals import ApprovalGate, ApprovalKind, ApprovalRequest, Decision
from adapt.engine.budget import BudgetTracker
from adapt.engine.config import ResolvedConfig
from adapt.engine.events import (
    EventReceiver,
    LLMCallFailed,
    LLMCallMade,
    NodeCreated,
    NodeUpdated,
    NullSink,
    StepAppended,
    TreeSink,
    as_sink,
)
from adapt.engine.siblings import Siblings
from adapt.engine.tree import LLMCall, MonitorTotals, Node, Step, UsageTotals
from adapt.envs.base import Environment
from adapt.errors import AwaitingApproval, BudgetError, CancelledByUser, ProviderError
from adapt.llm.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    ScoringModel,
    Usage,
    scoring_request,
)
from adapt.llm.recording import request_fingerprint

if TYPE_CHECKING:
    from adapt.engine.experience import ExperienceLibrary
    from adapt.engine.reuse import Experience

log = logging.getLogger(__name__)

CancelCheck = Callable[[], bool | Awaitable[bool]]
PriceFn = Callable[[str, Usage, bool], float | None]


def default_price(model: str, usage: Usage, simulated: bool) -> float | None:
    from adapt.llm.pricing import cost

    return cost(model, usage, simulated=simulated)


def _snapshot(node: Node) -> Node:
    """A copy of ``node`` that later changes do not reach: fields are replaced, never changed
    in place, except ``usage`` (``UsageTotals.add``), which is copied. (A deep copy of the
    plan on every event cost more than the rest of the event.)"""
    return node.model_copy(update={"usage": node.usage.model_copy()})


@dataclass(frozen=True, slots=True)
class EpisodeState:
    """What the environment's episode has said so far, and the context handed on: replaced
    as a whole, only by :class:`Run`'s own methods (:meth:`Run.fold`, :meth:`Run.carry`,
    :meth:`Run.restart_episode`)."""

    #: the best reward the episode gave (never below 0)
    reward: float = 0.0
    #: the environment ended the episode
    done: bool = False
    #: the latest propagated salient state (``None``: nothing to hand on)
    context: str | None = None


class Run:
    """One task's runtime. Strategies, the node runner and executors read it and call its
    methods; only its own methods change it (its episode state is an :class:`EpisodeState`,
    read through ``reward``, ``episode_done`` and ``context``)."""

    def __init__(
        self,
        env: Environment,
        config: ResolvedConfig,
        executor_model: ChatModel | Sequence[ChatModel],
        planner_model: ChatModel | None = None,
        *,
        sink: TreeSink | EventReceiver | None = None,
        cancel: CancelCheck | None = None,
        price: PriceFn | None = None,
        env_config: BaseModel | Mapping[str, Any] | None = None,
        approvals: ApprovalGate | None = None,
        library: ExperienceLibrary | None = None,
    ) -> None:
        self.env = env
        #: the config the episode started with (``run_task`` passes the validated model);
        #: strategies that run several trials start the environment again from it
        #: (``start_episode(run.env, run.env_config)``)
        self.env_config: BaseModel | dict[str, Any] = (
            env_config if isinstance(env_config, BaseModel) else dict(env_config or {}))
        self.config = config
        models: list[ChatModel] = (list(executor_model) if isinstance(executor_model, list | tuple)
                                   else [executor_model])  # type: ignore[list-item]
        if not models:
            raise ValueError("an executor model is needed")
        #: the executor cascade (``executor.models``), in order; the first is the default (a
        #: cascade attempt names its model in ``ExecuteOptions.model``)
        self.executor_models: tuple[ChatModel, ...] = tuple(models)
        self.planner_model = planner_model or models[0]
        self.sink: TreeSink = NullSink() if sink is None else as_sink(sink)
        self.cancel = cancel
        self.price = price or default_price
        self.budget = BudgetTracker(config.budget)
        self.nodes: dict[int, Node] = {}
        self.usage = UsageTotals()
        self.usage_by_role: dict[str, UsageTotals] = {}
        self.monitor_totals = MonitorTotals()
        self._state = EpisodeState()
        self._calls = 0
        #: where the decisions on approval requests come from (``RunConfig.approval``)
        self.approvals = approvals
        #: approval requests made so far, per (node id, kind)
        self._asked: dict[tuple[int, str], int] = {}
        #: the scheduler of sibling nodes that wait at the same time
        #: (``approval.parallel_siblings``); None: one node at a time
        self.siblings: Siblings | None = (
            Siblings() if config.approval.parallel_siblings else None)
        #: the run's use of the experience library (``run_task(library=...)``); None: none
        self.experience: Experience | None = None
        if library is not None:
            from adapt.engine.reuse import Experience  # (it imports the executors' base)

            self.experience = Experience(self, library)

    # -- the episode's state: read here, changed only by the methods below -------------------
    @property
    def executor_model(self) -> ChatModel:
        """The default executor model (the cascade's first); an executor calls the model its
        episode names (``Episode.model``), which a cascade attempt chooses."""
        return self.executor_models[0]

    @property
    def state(self) -> EpisodeState:
        return self._state

    @property
    def reward(self) -> float:
        return self._state.reward

    @property
    def episode_done(self) -> bool:
        return self._state.done

    @property
    def context(self) -> str | None:
        """The latest propagated salient state."""
        return self._state.context

    def fold(self, reward: float, done: bool) -> None:
        """Take in what an executor run (its ``ExecutionResult``) or the final action got from
        the environment: the best reward so far, and whether the episode ended."""
        state = self._state
        if reward > state.reward or (done and not state.done):
            self._state = replace(state, reward=max(state.reward, reward),
                                  done=state.done or done)

    def carry(self, context: str | None) -> None:
        """Hand ``context`` (the environment's salient state after a success) to later
        prompts."""
        self._state = replace(self._state, context=context)

    def restart_episode(self) -> None:
        """A fresh episode of the same task (a trial): not done, nothing handed on. The best
        reward stays (it is the task's)."""
        self._state = replace(self._state, done=False, context=None)

    # -- nodes -----------------------------------------------------------------------------
    async def new_node(self, **fields: Any) -> Node:
        self.budget.check_nodes(len(self.nodes) + 1)
        node = Node(id=len(self.nodes) + 1, **fields)
        self.nodes[node.id] = node
        await self.sink.emit(NodeCreated(node=_snapshot(node)))
        return node

    async def update(self, node: Node, **fields: Any) -> None:
        for key, value in fields.items():
            setattr(node, key, value)
        await self.sink.emit(NodeUpdated(node=_snapshot(node)))

    async def add_step(self, node: Node, step: Step) -> None:
        node.steps_count = step.index
        if self.experience is not None:
            self.experience.saw(step)
        await self.sink.emit(StepAppended(step=step))

    def children(self, node: Node) -> list[Node]:
        return sorted(
            (n for n in self.nodes.values() if n.parent_id == node.id), key=lambda n: n.position
        )

    # -- a person in the loop ----------------------------------------------------------------
    async def ask(self, node: Node, kind: ApprovalKind, proposal: dict[str, Any]) -> Decision:
        """Ask for a decision on ``proposal`` at ``node``: the node is ``awaiting_approval``
        until it comes. With no decision yet, what happened so far is stored and
        ``AwaitingApproval`` stops the run (a replay of it asks the same question again, in
        the same place, and finds the decision once it is made).

        With ``approval.parallel_siblings`` the request always parks (``Run.siblings``), with
        its decision or without: the scheduler hands the decision back when its turn comes,
        and stops the run once no parked request has one."""
        number = self._asked.get((node.id, kind), 0) + 1
        self._asked[(node.id, kind)] = number
        request = ApprovalRequest(node_id=node.id, kind=kind, number=number, proposal=proposal)
        status = node.status
        await self.update(node, status="awaiting_approval")
        decision = await self.approvals(request) if self.approvals is not None else None
        if self.siblings is not None:
            decision = await self.siblings.park(request, decision)
        elif decision is None:
            await self.sink.flush()
            raise AwaitingApproval(request)
        await self.update(node, status=status)
        return decision

    # -- LLM calls ---------------------------------------------------------------------------
    async def _cancelled(self) -> bool:
        if self.cancel is None:
            return False
        out = self.cancel()
        return bool(await out) if inspect.isawaitable(out) else bool(out)

    async def call(
        self,
        model: ChatModel,
        request: ChatRequest,
        node: Node,
        *,
        annotate: Callable[[ChatResponse], dict[str, Any]] | None = None,
    ) -> ChatResponse:
        """Check cancellation and budgets, call the model, record and emit the call.

        ``annotate`` (the decoding monitor's) turns the response into a record stored with the
        call (``LLMCall.monitor``)."""
        # persist what happened so far while the model answers
        await self.sink.flush_soon()
        if await self._cancelled():
            raise CancelledByUser("cancelled by user")
        self.budget.check_call(self.usage)
        self.budget.check_prompt(len(request.as_prompt()))
        if self.config.seed is not None and request.seed is None:
            request = request.model_copy(update={"seed": self.config.seed})
        remaining = self.budget.remaining_seconds()
        started = time.perf_counter()
        try:
            response = await asyncio.wait_for(model.complete(request), timeout=remaining)
        except TimeoutError:
            deadline = self.config.budget.deadline_seconds or 0.0
            raise BudgetError("deadline_seconds", deadline, self.budget.elapsed()) from None
        except ProviderError as exc:  # failed for good: observers (trace spans) hear of it
            await self.sink.call_failed(LLMCallFailed(
                node_id=node.id, role=request.role, model=model.name,
                chat=bool(request.messages), error=f"{type(exc).__name__}: {exc}",
                latency_s=time.perf_counter() - started,
                retries=int(getattr(exc, "retries", 0) or 0)))
            raise
        cost = self.price(response.model or model.name, response.usage, model.simulated)
        monitor = annotate(response) if annotate is not None else None
        if monitor is not None:
            self.monitor_totals.add(monitor)
        self._calls += 1
        call = LLMCall(
            id=self._calls,
            node_id=node.id,
            role=request.role,
            model=response.model or model.name,
            request_model=model.name,
            simulated=model.simulated or response.simulated,
            prompt=request.prompt,
            messages=[m.wire() for m in request.messages] if request.messages else None,
            tools=request.tools,
            stop=list(request.stop),
            completion=response.text,
            tool_calls=([c.model_dump() for c in response.tool_calls] if response.tool_calls
                        else None),
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            usage_estimated=response.usage.estimated,
            latency_s=response.latency_s,
            cost_usd=cost,
            monitor=monitor,
            retries=response.retries,
        )
        await self._record(call, node, request, response)
        return response

    async def score(self, model: ScoringModel, node: Node, prompt: str,
                    continuation: str) -> list[float] | None:
        """The token log-probabilities of ``continuation`` after ``prompt`` from a model that
        can score text (``ScoringModel``, e.g. PASS's choice between a summary and the raw
        results). Checked and recorded like any call: role ``scorer``, the scored text as the
        prompt, an empty completion, the continuation's token count as completion tokens and
        the prompt's estimated (the scoring endpoint reports no usage)."""
        await self.sink.flush_soon()
        if await self._cancelled():
            raise CancelledByUser("cancelled by user")
        self.budget.check_call(self.usage)
        started = time.perf_counter()
        # the call's number is taken as it starts, so concurrent scoring calls are numbered
        # (and replayed) in the order they reach the model
        self._calls += 1
        call_id = self._calls
        logprobs: list[float] | None = await model.score(prompt, continuation)
        name = str(getattr(model, "name", "model"))
        simulated = bool(getattr(model, "simulated", False))
        usage = Usage(prompt_tokens=-(-len(prompt) // 4), completion_tokens=len(logprobs or ()),
                      estimated=True)
        latency = time.perf_counter() - started
        response = ChatResponse(text="", usage=usage, latency_s=latency, model=name,
                                simulated=simulated, logprobs=logprobs)
        await self._record(LLMCall(
            id=call_id, node_id=node.id, role="scorer", model=name, request_model=name,
            simulated=simulated,
            prompt=prompt + continuation, completion="", prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens, usage_estimated=True,
            latency_s=latency, cost_usd=self.price(name, usage, simulated)), node,
            scoring_request(prompt, continuation), response)
        return logprobs

    async def _record(self, call: LLMCall, node: Node, request: ChatRequest,
                      response: ChatResponse) -> None:
        args = (call.prompt_tokens, call.completion_tokens, call.cost_usd)
        self.usage.add(*args)
        self.usage_by_role.setdefault(call.role, UsageTotals()).add(*args)
        node.usage.add(*args)
        await self.sink.emit(LLMCallMade(call=call, request_fingerprint=request_fingerprint(
            request), response=response))
