"""``used()`` records: which contexts and skills a session drew on, kept until a commit consumes them.

A record is a small dict (``id``, ``ts``, ``type``, ``uri``, ``input``, ``output``, ``success``,
``message_id``) in ``SessionState.usage``, so it is saved with the session and survives a
restart. The commit's archive step copies the records into the archive and removes exactly
those ids in the same locked write that moves the archive cursor; records added meanwhile
stay for the next commit. Context parts of archived messages count as used too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import json
from typing import Any

from langchain_core.messages import BaseMessage

from session_graph._base.ids import new_id, utc_now
from session_graph.errors import MessageError

__all__ = ["derived_usage", "usage_records"]

_SKILL_KEYS = {"uri", "input", "output", "success"}


def _json_safe(value: Any, where: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise MessageError(f"{where} must be JSON data (text, numbers, lists, dicts): {error}.") from None
    return value


def usage_records(contexts: Sequence[str] | None, skill: Mapping[str, Any] | None, message_id: str | None) -> list[dict[str, Any]]:
    """Validated records for one ``used()`` call (nothing is recorded if any argument is bad).

    Raises:
        MessageError: ``contexts`` is not a list of non-empty URIs, ``skill`` is not a dict with a
            ``uri`` (and only ``input``, ``output``, ``success``), ``success`` is not a bool, or
            neither is given.
    """
    if contexts is None and skill is None:
        raise MessageError("used() needs contexts=[uri, ...] or skill={'uri': ..., 'success': ...}.")
    if contexts is not None and (isinstance(contexts, str | bytes) or not isinstance(contexts, Sequence)
                                 or not all(isinstance(uri, str) and uri.strip() for uri in contexts)):
        raise MessageError(f"used(contexts=...) must be a list of non-empty URI strings, got {contexts!r:.80}.")
    now = utc_now()
    records = [{"id": new_id(), "ts": now, "type": "context", "uri": uri, "input": None, "output": None, "success": None,
                "message_id": message_id} for uri in dict.fromkeys(contexts or ())]
    if skill is not None:
        if not isinstance(skill, Mapping) or not isinstance(skill.get("uri"), str) or not skill["uri"].strip():
            raise MessageError(f"used(skill=...) must be a dict with a non-empty 'uri', got {skill!r:.80}.")
        unknown = set(skill) - _SKILL_KEYS
        if unknown:
            raise MessageError(f"used(skill=...) takes only uri, input, output and success; remove {sorted(unknown)}.")
        success = skill.get("success", True)
        if not isinstance(success, bool):
            raise MessageError(f"used(skill=...)['success'] must be True or False, got {success!r}.")
        records.append({"id": new_id(), "ts": now, "type": "skill", "uri": skill["uri"],
                        "input": _json_safe(skill.get("input"), "used(skill=...)['input']"),
                        "output": _json_safe(skill.get("output"), "used(skill=...)['output']"),
                        "success": success, "message_id": message_id})
    return records


def derived_usage(messages: Iterable[BaseMessage]) -> list[dict[str, Any]]:
    """Context parts of ``messages`` as usage records (one per distinct URI)."""
    seen: dict[str, dict[str, Any]] = {}
    for message in messages:
        content = message.content if isinstance(message.content, list) else []
        for block in content:
            extra = ((block.get("extras") or {}).get("session_graph") or {}) if isinstance(block, dict) else {}
            uri = extra.get("uri") if extra.get("part") == "context" else None
            if uri and uri not in seen:
                seen[uri] = {"id": f"derived:{message.id}:{uri}", "ts": "", "type": "context", "uri": uri, "input": None,
                             "output": None, "success": None, "message_id": message.id}
    return list(seen.values())
