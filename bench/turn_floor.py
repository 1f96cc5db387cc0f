"""The floor of the work an agent turn must do (issue 25), as a middleware of SessionMiddleware's shape.

``WorkFloor`` has ``SessionMiddleware``'s two hooks (``wrap_model_call`` and ``wrap_tool_call``,
the agent's own state, no command: a run without a checkpointer) and does, with the simplest
direct code, exactly the work the issue's other requirements impose on a turn, and nothing else:

- (b) the user's input durable before the first model call (issue 19): its line (``model_dump()``
  as JSON: orjson where installed, as the JSONL store, else ``json``) appended to a log file held
  open (``O_APPEND``) with one ``os.write``, then ``os.fsync``;
- (c) an exact count of each new message (input, tool call, tool result, answer: tiktoken o200k
  through ``accounting.tokens.token_measure``, the session's own counter: the same counts), each
  at the next model call, before the view (the answer's at the next turn's first): all in the
  agent's thread. A tool result counted where it arrives, in ``wrap_tool_call``, is counted in
  LangGraph's tool thread, which here costs ~2.4x the same count in the agent's thread (~73 vs
  ~31 us for the bench's 0.7 kB result, medians of 200 turns; ~20 us in a warm loop);
- (d) the turn's other messages (the tool call, its result, the answer) written once, one
  ``os.write`` of their lines when the answer ends the turn, no fsync;
- (e) the view handed to the model: a deque of (message, tokens) holding the newest messages, extended
  by each new one, its oldest dropped (and a tool result left first without its call) while the
  running total exceeds the budget less the agent's system prompt (counted when its text
  changes); the model gets the request with that deque as its messages (copied as
  SessionMiddleware copies a request: its ``_override``, no ``dataclasses.replace`` warnings).

What it does not do, and SessionMiddleware's turn buys over it: no ids check (the input is the
state's last message on the turn's first model call: no checkpointer, so the run's state holds this
turn only; a reply is taken as new), no session object (no full history in memory: the log on
disk is the history), no merge with another writer of the same session, no lock, no crash recovery
(no torn-line repair, no reload), no meta or trace, no resize machine (no policy, no memo or
summary, no lite/deep modes, no recall), no checkpointer support (no cut command), no write of a
``return_direct`` tool's result (the run ends in the tools node), no async twin.

``durable``, ``count`` and ``rest`` switch the parts off for the bench's split of the floor:
``durable`` alone is the fsync'd append of the input; ``count`` alone the four counts;
``rest`` (needs ``count``) the other messages' write and the view.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
import json
import os
from pathlib import Path
import sys
import time
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph.accounting.tokens import TiktokenCounter, token_measure
from session_graph.integrations.middleware import _override

try:
    import orjson

    def dumps(message: BaseMessage) -> bytes:
        """One message's log line: its ``model_dump()`` as JSON, newline ended."""
        return orjson.dumps(message.model_dump(), default=str) + b"\n"

    ENCODER = "orjson"
except ImportError:  # pragma: no cover - orjson ships with langsmith
    def dumps(message: BaseMessage) -> bytes:
        """One message's log line: its ``model_dump()`` as JSON, newline ended."""
        return (json.dumps(message.model_dump(), default=str) + "\n").encode()

    ENCODER = "json"


class WorkFloor(AgentMiddleware):
    """The work floor of a turn (module docstring): ``path`` the log file (opened for appending),
    ``budget`` the view's tokens with the system prompt, ``seed`` the history already held (the
    log gets its lines and the view its newest messages within the budget, untimed)."""

    def __init__(self, path: Path, budget: int, seed: Iterable[BaseMessage] = (), *,
                 durable: bool = True, count: bool = True, rest: bool = True) -> None:
        super().__init__()
        if rest and not count:
            raise ValueError("WorkFloor: the view (rest=True) keeps its budget by the counts: count=True too")
        self.durable, self.count, self.rest = durable, count, rest
        self.budget = budget
        self.measure = token_measure(TiktokenCounter("o200k_base"))
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.window: deque[tuple[BaseMessage, int]] = deque()
        self.total = 0  # the window's tokens
        self.pending: list[BaseMessage] = []  # the turn's messages not written yet
        self.new: list[BaseMessage] = []  # messages not counted yet (counted at the next model call)
        self._system: tuple[Any, int] = (None, 0)  # the system prompt's text and its tokens
        self.views: tuple[int, int] = (0, 0)  # the fewest and most messages a view handed the model (system prompt aside)
        seed = list(seed)
        if seed:
            os.write(self.fd, b"".join(map(dumps, seed)))
            for message in reversed(seed):  # the newest within the budget, as a session loaded at that size holds
                tokens = self.measure(message)
                if self.total + tokens > budget:
                    break
                self.window.appendleft((message, tokens))
                self.total += tokens

    def close(self) -> None:
        os.close(self.fd)

    def _arrived(self, message: BaseMessage) -> None:
        """A new message of the turn (a reply, a tool result): counted at the next model call, written
        at the turn's end."""
        if self.count:
            self.new.append(message)
        if self.rest:
            self.pending.append(message)

    def _viewed(self, request: Any) -> Any:
        """The request with the view as its messages: the oldest dropped while over the budget."""
        system = request.system_message
        if system is not None and system.content is not self._system[0] and system.content != self._system[0]:
            self._system = (system.content, self.measure(system))
        room = self.budget - (self._system[1] if system is not None else 0)
        window = self.window
        while window and (self.total > room or isinstance(window[0][0], ToolMessage)):
            self.total -= window.popleft()[1]
        messages = [message for message, _ in window]
        self.views = (min(self.views[0] or len(messages), len(messages)), max(self.views[1], len(messages)))
        return _override(request, messages=messages)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        held = request.state["messages"]
        if held and isinstance(held[-1], HumanMessage):  # the turn's first model call: its input
            message = held[-1]
            if self.durable:
                os.write(self.fd, dumps(message))
                os.fsync(self.fd)
            if self.count:
                self.new.append(message)
        if self.new:  # every count here, in the agent's thread (a tool result arrives in LangGraph's tool thread)
            for message in self.new:
                tokens = self.measure(message)
                if self.rest:
                    self.window.append((message, tokens))
                    self.total += tokens
            self.new.clear()
        response = handler(self._viewed(request) if self.rest else request)
        replies = response.result if isinstance(response, ModelResponse) else [response]
        ended = False
        for reply in replies:
            if isinstance(reply, BaseMessage):
                self._arrived(reply)
                ended = ended or (isinstance(reply, AIMessage) and not reply.tool_calls)
        if ended and self.pending:  # the answer ends the turn: its other messages, one write, no fsync
            os.write(self.fd, b"".join(map(dumps, self.pending)))
            self.pending.clear()
        return response

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = handler(request)
        if isinstance(result, ToolMessage):
            self._arrived(result)
        return result


class Clocked(WorkFloor):
    """A ``WorkFloor`` whose CPU (``time.process_time``) is summed in ``parts`` while ``clocking()``:
    "hooks" its hooks' own (the handler's run, the model's and the tool's, taken out), and of that
    "fsync" (``os.fsync``), "write" (``os.write``) and "counts" (its ``measure``). For a pass of its
    own, outside the timed alternation: the clock's reads cost about a microsecond each."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # the seed counted unclocked
        self.parts = dict.fromkeys(("hooks", "fsync", "write", "counts"), 0.0)
        self.measure = self._timed("counts", self.measure)

    def _timed(self, part: str, fn: Any) -> Any:
        parts = self.parts

        def timed(*args: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*args)
            finally:
                parts[part] += time.process_time() - start
        return timed

    @contextmanager
    def clocking(self) -> Iterator[dict[str, float]]:
        """Clock the parts (``os.write`` and ``os.fsync`` wrapped meanwhile), from zero."""
        real = os.write, os.fsync
        self.parts.update(dict.fromkeys(self.parts, 0.0))
        os.write, os.fsync = self._timed("write", real[0]), self._timed("fsync", real[1])  # type: ignore[assignment]
        try:
            yield self.parts
        finally:
            os.write, os.fsync = real  # type: ignore[assignment]

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return own_cpu(super().wrap_model_call, request, handler, self.parts, "hooks")

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return own_cpu(super().wrap_tool_call, request, handler, self.parts, "hooks")


def own_cpu(hook: Any, request: Any, handler: Any, spent: dict[str, float], part: str,
            clock: Any = time.process_time) -> Any:
    """``hook(request, handler)``, its own CPU (``clock``: the process's, or ``time.thread_time`` for
    the running thread's alone) added to ``spent[part]``: the handler's run (the model's, the tool's)
    taken out."""
    inner = [0.0]

    def timed(request: Any) -> Any:
        start = clock()
        try:
            return handler(request)
        finally:
            inner[0] += clock() - start

    start = clock()
    try:
        return hook(request, timed)
    finally:
        spent[part] += clock() - start - inner[0]
