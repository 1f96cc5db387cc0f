"""Where a resize run enters the graph: at the decision's route when the judge decided before the
run (a forced type, or the default policy on the running totals), at the judge node otherwise."""

from __future__ import annotations

from typing import Any

from conftest import Api, chat
import pytest

from session_graph import Session, UnknownResizeTypeError, build_resize_graph
from session_graph.resize.policy import default_policy
from session_graph.resize.state import ResizeContext, SessionState


def _visited(graph: Any, state: SessionState, context: ResizeContext | None = None) -> list[str]:
    return [name for step in graph.stream(state, context=context or ResizeContext(), stream_mode="updates") for name in step]


def test_a_run_graph_for_a_decided_type_starts_at_its_route() -> None:
    state = SessionState(id="s", full_chat_history=[], current_chat_history=[], memo={}, settings=Session().settings)
    assert _visited(build_resize_graph(mode="lite", sync=True), state) == ["judge"]  # the judge decides (nothing to do)
    state.decision = {"type": "lite", "reason": "force", "severity": 1000}
    assert _visited(build_resize_graph(mode="lite", sync=True, start="lite"), state) == ["lite_prune"]  # no judge node
    assert "judge" not in build_resize_graph(mode="memo", sync=True, start="deep").nodes
    state.decision = {"type": "mine"}
    mine = ResizeContext(resize_handlers={"mine": lambda full, current, memo, settings: (full, current, memo)})
    assert _visited(build_resize_graph(resize_types=["mine"], mode="lite", sync=True, start="mine"), state, mine) == ["mine"]
    with pytest.raises(UnknownResizeTypeError, match="nowhere"):
        build_resize_graph(mode="lite", sync=True, start="nowhere")


def _judged_in_graph(session: Session, calls: list[Any]) -> Session:
    """``session`` whose policy handler is the default policy: the graph's judge decides."""
    def policy(full: Any, current: Any, settings: Any) -> Any:
        calls.append(len(current))
        core = session._core
        return default_policy(core.ledger.totals, core.state.turns, core.state.last_resize_turn, settings.resolved(),
                              core.ledger.fixed_tokens(core.state, settings.resolved()))

    return session.set_policy_handler(policy)


def test_deciding_before_the_run_changes_nothing_the_run_does(api: Api) -> None:
    before, calls = Session("a").use_lite(chars=600, every_n_turns=3), []
    inside = _judged_in_graph(Session("a").use_lite(chars=600, every_n_turns=3), calls)
    for turn in range(12):
        for session in (before, inside):
            chat(session, 1, size=40 + 7 * turn, start=turn)
            api.resize(session)
        assert [m.content for m in before.current_chat_history] == [m.content for m in inside.current_chat_history]
        assert before.memo == inside.memo and before.last_resize_turn == inside.last_resize_turn
    assert len(calls) == 12  # the policy handler was asked once a turn, in the graph
    assert [r.route for r in before.trace] == [r.route for r in inside.trace]  # judge first, either way
    assert [(r.type, r.reason, r.messages_after) for r in before.trace] == [(r.type, r.reason, r.messages_after) for r in inside.trace]
    assert len(before.trace) >= 4 and all(r.route == ("judge", "lite_prune") for r in before.trace)


def test_a_replaced_judge_still_decides_in_the_graph(api: Api) -> None:
    seen: list[int] = []

    def judge(state: SessionState) -> dict[str, Any]:
        seen.append(len(state.current_chat_history))
        return {"decision": {"type": "lite", "reason": "mine"}}

    session = chat(Session().use_lite(messages=4), 4).override_node("judge", judge)
    api.resize(session, "lite")  # even a forced resize asks the replaced judge
    assert seen == [8] and session.trace[-1].reason == "mine" and session.trace[-1].route == ("judge", "lite_prune")
    assert len(session.current_chat_history) <= 4


@pytest.mark.parametrize("name", ["lite_prune", "judge", "__end__"])
def test_a_forced_type_that_names_a_graph_node_is_not_told_to_register_a_handler_under_that_name(api: Api, name: str) -> None:
    session = chat(Session().use_lite(messages=4), 4)
    with pytest.raises(UnknownResizeTypeError) as failed:
        api.resize(session, name)
    assert f"set_resize_handlers({name!r}" not in str(failed.value)  # that advice raises ConfigurationError
    assert "names a node of the resize graph" in str(failed.value) and "known types: deep, lite" in str(failed.value)
    with pytest.raises(Exception, match="cannot name a graph node"):
        session.set_resize_handlers(name, lambda full, current, memo, settings: (full, current, memo))
