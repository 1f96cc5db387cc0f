"""Every method ``Session`` (and ``SessionManager``) takes from a package, called as a user would, checked by
``mypy --strict`` (tests/test_typing.py): a method taken by name (``commit = session_commit.commit``)
type-checks only if ``Session`` satisfies the Protocol its first parameter declares."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

from session_graph import Session, SessionManager


async def every_method(session: Session, message: BaseMessage) -> list[object]:
    same: Session = (session.set_settings("session.mode", "lite").configure(mode="memo", limit={"chars": 900})
                     .set_policy_handler(None).set_resize_handlers("deep", None).set_attachment_summary_handler(None)
                     .set_memo_update_handler(None).set_summary_handler(None).override_node("judge", None)
                     .used(["viking://x"]).override_commit_node("finalize", lambda state, runtime: {}))
    loaded: Session = same.load_json(session.to_json()).load_yaml(session.to_yaml()).load_dict(session.to_dict())
    history: list[dict[str, Any]] = loaded.get_history(10, compat=None)
    hits: list[Any] = [*session.search("tea", 3, mode="ranked"), *await session.asearch("tea")]
    added: BaseMessage = session.add_message("user", [{"type": "text", "text": "hi"}])
    parts = session.parts(added)
    result: dict[str, Any] = session.commit(dry_run=True)
    again: dict[str, Any] = await session.acommit(wait=False)
    drawings = [session.draw(format="mermaid"), session.draw_commit(), session.draw_mermaid(), session._repr_html_()]
    figures = [session.plot(unit="tokens"), session.plot_costs()]
    tool = session.update_tool_part("m1", "t1", "ok", "completed")
    return [history, hits, parts, result, again, drawings, figures, tool, message]


def manager_imports(manager: SessionManager) -> list[str]:
    return [*manager.import_nanobot("sessions", on_existing="skip"), *manager.import_document("s.json", key="k"),
            *manager.import_openviking("viking", on_existing="replace")]
