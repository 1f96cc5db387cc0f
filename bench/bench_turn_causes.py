"""Where an agent turn with SessionMiddleware spends its CPU, by cause; optionally against another tree.

Run: ``PYTHONPATH=. python bench/bench_turn_causes.py`` (``--sizes 10000,100000``, ``--rounds``,
``--batch``). The agent and turn of ``bench_turn`` (``create_agent`` + ``SessionMiddleware`` + a
JSONL store, fsync on, token budget 4,000, one tool call a turn) and the stock agent run in
alternating batches in one process (the order turned each round, ``bench_turn.order``; ``--rounds``
raised to whole cycles of it: each agent in every place equally often). ``--baseline DIR``: also the same agent from another checkout
of the package (e.g. ``git archive <commit> | tar -x -C DIR``), each tree's ``session_graph``
modules swapped into ``sys.modules`` before its batch, so both are timed in one process.

Timed (CPU, ``time.process_time``; medians of the batches for whole turns, sums over all batches
for the causes): per turn, the whole ``invoke``; inside the middleware's two hooks
(``wrap_model_call``, ``wrap_tool_call``) without the model's and the tool's own run; of that,
``SessionManager.save`` (all the turn's saves, the fsync included) and ``Session.resize``, and the
rest (recording, judging, the view, the glue); and the turn's CPU beyond the stock agent's that
lies outside the hooks (median whole turn - median stock turn - mean inside), split into the
middleware's shape (an agent whose middleware has our state schema, both hooks calling their
handlers and the model hook's cut command, and does nothing else: median - median stock) and the
remainder. fsyncs counted by wrapping ``os.fsync``.

The shape split: a one-hook no-op middleware (``bench_turn.NoOp``, the agent's own state) - stock,
and the rest of the shape (our schema, the tool hook, the cut command: shape - no-op). The
remainder's leads, each an agent of its own in the same alternation: the model's work on the
longer input (the stock agent, no middleware, whose model is handed what SessionMiddleware hands
it: ``bench_turn.viewed_stock``; - stock), also printed as a second baseline of the whole turn
(the headline stays against the stock agent on the turn's input); and what CPU spent in a hook
adds outside it on this machine (the shape whose model hook spins ``thread_time`` for the CPU the
session's hooks took per turn in a calibration run, half per model call: that agent - shape -
the spin's own CPU), and the same for a hook that reads messages of a 100,000-message history for
that CPU (memory the caches hold little of, as the session's hooks touch the session's records,
encoders and files): the CPU a hook's work costs the agent's code after it, whatever the hook does.
Then pieces outside the hooks timed alone (``micro``): the fake model's ``invoke`` on the view vs the
turn's input, and LangGraph applying the cut command and our state schema on a one-node graph.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import tempfile
import time
from typing import Any

from bench_agents import _Model, _replies
from bench_agents import _question as question
from bench_turn import (
    BUDGET,
    PROMPT,
    NoOp,
    Shape,
    balanced,
    bench_agent,
    calls_outside,
    flagged,
    history,
    order,
    viewed_stock,
)
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
import trees as checkouts


def load(root: str) -> dict[str, Any]:
    """The ``session_graph`` of the checkout at ``root`` with its integrations (``checkouts.load``)."""
    return checkouts.load(root, "session_graph.integrations")


use = checkouts.use


def shape(modules: dict[str, Any]) -> AgentMiddleware:
    """``bench_turn.Shape`` of the tree ``modules`` hold (its state schema, its cut)."""
    return Shape.of(modules["session_graph.integrations.middleware"])


def spinning(modules: dict[str, Any], spent: dict[str, float], label: str, walk: list[Any] | None = None) -> AgentMiddleware:
    """The shape whose model hook first spends ``spent["target"]`` ms of the main thread's CPU,
    counted in ``spent[label]``: spinning on the clock (CPU only, no memory touched), or with
    ``walk`` reading its messages in turn from where the last call stopped (memory a cache holds
    little of, as a session's history)."""
    at = [0]

    class Spin(Shape):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            start = time.thread_time()
            end = start + spent["target"] / 1e3
            while time.thread_time() < end:
                if walk:
                    for message in walk[at[0]:at[0] + 50]:
                        len(message.content) + len(message.id or "")
                    at[0] = (at[0] + 50) % len(walk)
            spent[label] += time.thread_time() - start
            return super().wrap_model_call(request, handler)
    return Spin.of(modules["session_graph.integrations.middleware"])


def micro(views: tuple[list[Any], list[Any]], modules: dict[str, Any], rounds: int) -> dict[str, float]:
    """Per turn (two model calls: 1 message held at the first, the call and its result at the
    second), the CPU ms of pieces outside our hooks, each timed alone against its baseline in
    alternated batches (the fastest batch: interference only adds): the fake model's ``invoke`` on
    the session's view vs on the stock agent's input; a one-node LangGraph graph on the agent's
    state (``add_messages``) whose node returns the reply and the cut command (a ``RemoveMessage``
    per held message, and ``session_key`` set) vs the reply alone; the same graph with our state
    schema vs the agent's own."""
    schema = modules["session_graph.integrations.middleware"].SessionMiddleware.state_schema  # the agent's own since the key is read from the config
    turn_inputs = ([SystemMessage(content=PROMPT), HumanMessage(content=question(1), id="h")],
                   [SystemMessage(content=PROMPT), HumanMessage(content=question(1), id="h"), *history(4)[1:3]])
    model = _Model(messages=_replies())
    held = ([HumanMessage(content=question(1), id="h")], history(4)[1:3])
    reply = AIMessage(content="done", id="r")

    def graph(state: Any, cut: bool) -> Any:
        def node(values: Any) -> Any:
            commands = [Command(update={"messages": [reply]})]
            if cut:
                update: dict[str, Any] = {"messages": [RemoveMessage(id=m.id) for m in values["messages"]]}
                if values.get("session_key") != "bench":
                    update["session_key"] = "bench"
                commands.append(Command(update=update))
            return commands
        builder = StateGraph(state)
        builder.add_node("model", node)
        builder.add_edge(START, "model")
        builder.add_edge("model", END)
        return builder.compile()

    graphs = {"agent state": graph(AgentState, False), "our schema": graph(schema, False), "our schema + cut": graph(schema, True)}
    work = {"model on the turn input": lambda: [model.invoke(m) for m in turn_inputs],
            "model on the view": lambda: [model.invoke(m) for m in views]}
    for name, compiled in graphs.items():
        work[name] = lambda compiled=compiled: [compiled.invoke({"messages": list(h)}) for h in held]
    best = dict.fromkeys(work, float("inf"))
    for round_ in range(balanced(rounds, len(work))):
        for name in order(list(work), round_):
            fn = work[name]
            start = time.process_time()
            for _ in range(20):
                fn()
            best[name] = min(best[name], (time.process_time() - start) / 20 * 1e3)
    return best


def instrument(modules: dict[str, Any], spent: dict[str, float]) -> None:
    """Count the CPU of the middleware's hooks (without their handlers), saves and resizes."""
    manager = modules["session_graph.stores.manager"].SessionManager
    session = modules["session_graph.session"].Session
    middleware = modules["session_graph.integrations.middleware"].SessionMiddleware

    def timed(cls: Any, attr: str, label: str) -> None:
        real = getattr(cls, attr)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - start

        setattr(cls, attr, wrapper)

    timed(manager, "save", "save")
    timed(session, "resize", "resize")
    for attr in ("wrap_model_call", "wrap_tool_call"):
        real = getattr(middleware, attr)

        def hook(self: Any, request: Any, handler: Any, real: Any = real) -> Any:
            def inner(request: Any) -> Any:
                start = time.process_time()
                try:
                    return handler(request)
                finally:
                    spent["handlers"] += time.process_time() - start

            start = time.process_time()
            try:
                return real(self, request, inner)
            finally:
                spent["hooks"] += time.process_time() - start

        setattr(middleware, attr, hook)


def memo_of(chars: int) -> dict[str, Any]:
    """A structured memo of about ``chars`` characters: facts of ~100 characters each."""
    return {"facts": [f"fact {i}: " + "detail " * 13 for i in range(chars // 100)]} if chars else {}


def measure(trees: dict[str, str], size: int, rounds: int, batch: int, folder: Path, memo_chars: int = 0) -> None:
    runs: dict[str, tuple[Any, Any, dict[str, Any] | None]] = {}
    spent: dict[str, dict[str, float]] = {}
    for name, root in trees.items():
        modules = load(root)
        spent[name] = dict.fromkeys(("save", "resize", "hooks", "handlers"), 0.0)
        instrument(modules, spent[name])  # before the agent is built: it binds the hooks
        flagged(modules["session_graph.integrations.middleware"].SessionMiddleware)  # for the call count (calls_outside)
        package, integrations = modules["session_graph"], modules["session_graph.integrations"]
        manager = package.SessionManager(tempfile.mkdtemp(prefix=f"{name}-{size}-".replace(" ", "_"), dir=folder))  # a size may be repeated
        manager.session_factory = lambda key, package=package: package.Session(key).configure(limit={"tokens": BUDGET})
        session = manager.get_or_create("bench")
        for message in history(size):
            session.append_message(message)
        session.resize()
        session.memo.update(memo_of(memo_chars))  # the memo every revision read fingerprints (an edit in place is seen by content)
        manager.save(session)
        agent = bench_agent(integrations.SessionMiddleware(manager=manager))
        runs[name] = (agent, {"configurable": {"thread_id": "bench"}}, modules)
        viewed, views = viewed_stock(integrations.SessionMiddleware, manager)  # the last tree's view
        sizes = (len(views[0]), len(views[1]))
    ours = modules  # the last tree's
    flagged(Shape)
    spin = {"target": 0.0, "spin": 0.0, "walk": 0.0}
    runs["stock"] = (bench_agent(), None, None)
    runs["stock + view"] = (viewed, None, None)
    runs["no-op"] = (bench_agent(NoOp()), None, None)
    runs["shape"] = (bench_agent(shape(modules)), {"configurable": {"thread_id": "bench"}}, None)
    runs["shape + spin"] = (bench_agent(spinning(modules, spin, "spin")), {"configurable": {"thread_id": "bench"}}, None)
    runs["shape + walk"] = (bench_agent(spinning(modules, spin, "walk", history(100_000))), {"configurable": {"thread_id": "bench"}}, None)
    turn = [0]

    def run(agent: Any, config: Any) -> None:
        turn[0] += 1
        agent.invoke({"messages": [HumanMessage(content=question(turn[0]))]}, config)

    for agent, config, modules in runs.values():
        if modules is not None:
            use(modules)
        for _ in range(3):
            run(agent, config)
    last = list(trees)[-1]
    for counts in spent.values():
        for label in counts:
            counts[label] = 0.0
    agent, config, modules = runs[last]
    use(modules)
    for _ in range(2 * batch):  # calibration: the CPU inside the last tree's hooks per turn, spun half per model call
        run(agent, config)
    spin["target"] = (spent[last]["hooks"] - spent[last]["handlers"]) / (2 * batch) * 1e3 / 2
    for counts in (*spent.values(), spin):
        for label in counts:
            if label != "target":
                counts[label] = 0.0
    times: dict[str, list[float]] = {name: [] for name in runs}
    fsyncs = dict.fromkeys(runs, 0)
    outside: dict[str, list[float]] = {name: [] for name in runs}  # each batch's CPU per turn less its hooks' (or control's) own

    def own(name: str) -> float:
        if name in spent:
            return spent[name]["hooks"] - spent[name]["handlers"]
        return spin["spin"] if name == "shape + spin" else spin["walk"] if name == "shape + walk" else 0.0
    real = os.fsync
    rounds = balanced(rounds, len(runs))  # whole cycles of the turning order: no agent favoured by its place
    for round_ in range(rounds):
        for name in order(list(runs), round_):
            agent, config, modules = runs[name]
            if modules is not None:
                use(modules)
            calls = [0]

            def counted(fd: int, calls: list[int] = calls) -> None:
                calls[0] += 1
                real(fd)

            os.fsync = counted  # type: ignore[assignment]
            before = own(name)
            start = time.process_time()
            for _ in range(batch):
                run(agent, config)
            times[name].append((time.process_time() - start) / batch * 1e3)
            outside[name].append(times[name][-1] - (own(name) - before) / batch * 1e3)
            os.fsync = real  # type: ignore[assignment]
            fsyncs[name] += calls[0]
    turns = rounds * batch
    ms = {name: statistics.median(values) for name, values in times.items()}
    stock = ms["stock"]
    floor = ms["shape"] - stock

    def paired(a: str, b: str) -> float:  # the median of a - b over the rounds (each round's batches adjacent in time)
        return statistics.median(x - y for x, y in zip(times[a], times[b], strict=True))

    model = paired("stock + view", "stock")
    spun = spin["spin"] / turns * 1e3
    spill = paired("shape + spin", "shape") - spun
    walked = spin["walk"] / turns * 1e3
    spill_walk = paired("shape + walk", "shape") - walked
    print(f"agent turn at {size:,} messages (create_agent, 1 tool call, JSONL, fsync on), CPU per turn, "
          f"medians of {rounds} rounds of alternated batches of {batch} (the agents' order turned each round: each in every "
          f"place equally often), load {os.getloadavg()[0]:.1f}: stock agent {stock:.2f} ms")
    for name in trees:
        whole = statistics.median(times[name])
        c = {label: value / turns * 1e3 for label, value in spent[name].items()}
        inside = c["hooks"] - c["handlers"]
        print(f"  {name}: whole turn {whole:.2f} ms = {whole / stock:.2f}x stock, fsyncs {fsyncs[name] / turns:.1f}; inside the hooks "
              f"(without the model's and tool's run) {inside:.3f} ms: saves {c['save']:.3f}, resize {c['resize']:.3f}, "
              f"the rest (record, judge, view, glue) {inside - c['save'] - c['resize']:.3f}; "
              f"beyond stock outside the hooks (whole - stock - inside) {whole - stock - inside:.3f}: the middleware's shape "
              f"(no-op hooks + the cut command where the shape makes one: no checkpointer here, so none in a tree that cuts only with one; a separate agent - stock) {floor:.3f}, the remainder {whole - stock - inside - floor:.3f}")
        remainder = whole - stock - inside - floor
        print(f"    the shape: a one-hook no-op middleware (wrap_model_call calling the handler, the agent's own state) - stock "
              f"{paired('no-op', 'stock'):.3f}; its schema + the tool hook + the cut command where the shape has them (shape - no-op) {paired('shape', 'no-op'):.3f} "
              f"(medians of the rounds' differences)")
        print(f"    the remainder's leads: the model handed the session's view ({sizes[0]} and {sizes[1]} messages, system message "
              f"included, as SessionMiddleware handed them on one turn; the stock agent with no middleware so handed - stock) {model:.3f}; CPU spent in a hook spilling outside it "
              f"(the shape spinning {spun:.3f} ms a turn in its model hook, the CPU inside our hooks in a calibration run: "
              f"that agent - shape - the spin) {spill:.3f}, or the same CPU reading messages of a 100,000-message history ({walked:.3f} ms: "
              f"that agent - shape - the reading) {spill_walk:.3f} (medians of the rounds' differences); the remainder "
              f"- the model's part - the reading's spill {remainder - model - spill_walk:.3f} (- the spin's instead {remainder - model - spill:.3f})")
        fast = {n: min(v) for n, v in outside.items()}
        beyond, shaped = fast[name] - fast["stock"], fast["shape"] - fast["stock"]
        reading, viewing = fast["shape + walk"] - fast["shape"], fast["stock + view"] - fast["stock"]
        print(f"    the same from each agent's fastest batch (interference only adds; the hooks' or the control's own CPU taken out "
              f"batch by batch): beyond stock outside the hooks {beyond:.3f}: the shape {shaped:.3f}, the remainder {beyond - shaped:.3f}; "
              f"the model handed the view {viewing:.3f}; the spin's spill {fast['shape + spin'] - fast['shape']:.3f}, the reading's "
              f"{reading:.3f}; the remainder - the model's part - the reading's spill {beyond - shaped - viewing - reading:.3f}")
        print(f"    second baseline: the stock agent handed the same messages as the session's view {ms['stock + view']:.2f} ms; "
              f"whole turn / this baseline {whole / ms['stock + view']:.2f}x", flush=True)
    use(runs[last][2])
    counted = calls_outside({"shape": runs["shape"][:2], last: runs[last][:2]}, 20)
    per = {name: sum(found.values()) / 20 for name, found in counted.items()}
    diff = {key: (counted[last][key] - counted["shape"][key]) / 20 for key in counted[last] | counted["shape"]}
    top = sorted((key for key in diff if abs(diff[key]) >= 1), key=lambda key: -abs(diff[key]))[:4]
    print(f"  function calls per turn outside the hooks ({last}; Python and C, sys.setprofile in every thread, 20 turns; "
          f"deterministic but for waits on threads): shape {per['shape']:,.0f}, session {per[last]:,.0f} ({per[last] - per['shape']:+,.0f}); those differing "
          f"by one or more a turn: " + (", ".join(f"{k[1]} ({k[0]}) {diff[k]:+.0f}" for k in top) or "none"))
    pieces = micro(views, ours, rounds)
    print(f"  pieces outside the hooks, each alone, CPU per turn (two model calls), the fastest of {balanced(rounds, len(pieces))} "
          f"alternated batches of 20 (order turned each round): "
          f"the fake model's invoke on the session's view {pieces['model on the view']:.3f} ms / on the stock agent's input "
          f"{pieces['model on the turn input']:.3f} ms (+{pieces['model on the view'] - pieces['model on the turn input']:.3f}); "
          f"a one-node graph on the agent's messages returning the reply: with our state schema "
          f"+{pieces['our schema'] - pieces['agent state']:.3f} ms over the agent's own, with the cut command (RemoveMessage per held "
          f"message, session_key) +{pieces['our schema + cut'] - pieces['our schema']:.3f} ms over the reply alone")
    if len(trees) == 2:
        a, b = trees
        print(f"  {b} / {a}: whole turn {statistics.median(times[b]) / statistics.median(times[a]):.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--memo-chars", type=int, default=0, help="a memo of about this many characters (facts of ~100)")
    parser.add_argument("--baseline", help="another checkout's root (the directory holding its session_graph/)")
    args = parser.parse_args()
    trees = checkouts.roots(args.baseline)
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            measure(trees, size, args.rounds, args.batch, Path(tmp), args.memo_chars)


if __name__ == "__main__":
    main()
