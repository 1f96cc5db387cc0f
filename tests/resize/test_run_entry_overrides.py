"""A run whose judge decided before it (a forced type, or the default policy) still runs every
replaced node of its route, with the graph compiled for that session's overrides (never one
cached for another session's nodes at the same mode and start)."""

from __future__ import annotations

import inspect
from typing import Any

from conftest import Api, chat
import pytest

from session_graph import Session
from session_graph.resize import nodes


def _memo(memo: dict[str, Any], messages: list[Any], attachments: Any, settings: Any) -> dict[str, Any]:
    return {**memo, "seen": [*memo.get("seen", []), *(m.content[:3] for m in messages)]}


def _recording(name: str, seen: list[str]) -> Any:
    """The built-in node ``name``, recording each visit in ``seen``."""
    builtin = getattr(nodes, name)
    if inspect.isgeneratorfunction(builtin):
        def flow(state: Any, runtime: Any) -> Any:
            seen.append(name)
            return (yield from builtin(state, runtime))

        return flow

    def plain(state: Any, runtime: Any) -> Any:
        seen.append(name)
        return builtin(state, runtime)

    return plain


def _session() -> Session:
    return Session("s", memo_update_handler=_memo).use_memo(chars=400, every_n_turns=0)


@pytest.mark.parametrize("name", ["attachment_summary", "deep_chunk", "memo_update", "lite_prune"])
@pytest.mark.parametrize("force", ["deep", False])
def test_a_decided_run_runs_the_replaced_node_of_its_route(api: Api, name: str, force: Any) -> None:
    plain, seen = _session(), []
    replaced = _session().override_node(name, _recording(name, seen))
    for turn in range(6):
        for session in (plain, replaced):  # the plain session compiles (and caches) its graph first
            chat(session, 1, size=60, start=turn)
        api.resize(plain, force)
        before = len(seen)
        api.resize(replaced, force)
        record = replaced.trace[-1] if replaced.trace else None
        if force or (record is not None and record.turn == replaced.turns):  # this turn ran the deep route
            assert seen[before:] and name in record.route and record.route[0] == "judge"
        assert [m.content for m in replaced.current_chat_history] == [m.content for m in plain.current_chat_history]
        assert replaced.memo == plain.memo
    assert seen and [r.route for r in replaced.trace] == [r.route for r in plain.trace]
