"""Write the golden nanobot sessions under this folder with the real nanobot package.

Run once per nanobot version, each from a throwaway virtualenv holding that version:

    python3 -m venv /tmp/nb && /tmp/nb/bin/pip install nanobot-ai==0.3.5
    /tmp/nb/bin/python tests/data/nanobot/generate.py

It writes ``<version>/sessions/`` exactly as that version's ``SessionManager`` lays it out
(0.1.x: ``~/.nanobot/sessions/<safe key>.jsonl``, no key in the file; 0.2.x:
``<workspace>/sessions/<safe key>.jsonl``; 0.3.x: ``<sessions root>/<workspace id>/<base64
key>.jsonl``) and ``<version>/history.json.gz``: ``Session.get_history(max_messages=n)`` of every
session for every n, as that version returns it. The optional test in
``tests/test_nanobot.py`` runs the same package against our exports.
"""

from __future__ import annotations

import gzip
from importlib.metadata import version as package_version
import inspect
import json
import os
from pathlib import Path
import shutil
import sys
import tempfile

VERSION = package_version("nanobot-ai")
KEYS = ["telegram:42", "discord:guild:chan_1", "slack:U_1:T_2", "nocolon_key", "cli:direct", "plain"]


def stamp(minute: int, second: int) -> str:
    return f"2026-03-0{1 + minute // 60}T10:{minute % 60:02d}:{second:02d}.{minute * 7919 % 1000000:06d}"


def conversation(session, index: int) -> None:
    """Turns shaped like nanobot's agent loop writes them (tool calls, reasoning, media, markers)."""
    add = session.add_message
    for turn in range(3 + index % 3):
        minute = turn * 3 + index
        call = f"call_{index}_{turn}"
        extra = {"media": [f"/home/u/.nanobot/media/photo_{turn}.jpg"]} if turn == 1 else {}
        add("user", f"turn {turn}: 你好, check `pytest -k slow` in repo {index}", timestamp=stamp(minute, 0), **extra)
        add("assistant", None if turn % 2 else "Let me look.", timestamp=stamp(minute, 1),
            tool_calls=[{"id": call, "type": "function",
                         "function": {"name": "exec", "arguments": json.dumps({"command": f"pytest -k slow -x # {turn}"})}}],
            reasoning_content=f"The user wants test {turn} run.")
        add("tool", f"{turn} passed, 1 skipped\n中文输出", tool_call_id=call, name="exec", timestamp=stamp(minute, 2))
        add("assistant", f"All good ({turn}).\n```python\nassert x == {turn}\n```", timestamp=stamp(minute, 3),
            tools_used=["exec"], latency_ms=1200 + turn, reasoning_content="Summarise the run." if turn else None)
        if turn == 1:
            add("user", "/status", timestamp=stamp(minute, 4), _command=True)
            add("assistant", "Reminder: the build finished.", timestamp=stamp(minute, 5), _channel_delivery=True)
    add("assistant", "", timestamp=stamp(59, 0), thinking_blocks=[{"type": "thinking", "thinking": "idle"}])


def main() -> None:
    out = Path(__file__).resolve().parent / VERSION
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        home.mkdir()
        os.environ["HOME"] = str(home)
        from nanobot.session.manager import SessionManager

        workspace = Path(scratch) / "workspace"
        kwargs = {}
        if "sessions_root" in inspect.signature(SessionManager).parameters:
            kwargs["sessions_root"] = Path(scratch) / "root"
        manager = SessionManager(workspace, **kwargs)
        history = {}
        for index, key in enumerate(KEYS):
            session = manager.get_or_create(key)
            session.metadata.update({"title": f"chat {index}", "channel": key.split(":")[0]})
            conversation(session, index)
            if hasattr(session, "commit_summary_checkpoint") and index % 2 == 0:
                session.commit_summary_checkpoint(f"Working memory {index}: tests run, all green.", insert_at=4)
            elif hasattr(session, "last_consolidated") and index % 2 == 0:
                session.last_consolidated = 4
                session.metadata["_last_summary"] = {"text": f"Consolidated {index}", "last_active": stamp(0, 0)}
            manager.save(session)
            loaded = SessionManager(workspace, **kwargs).get_or_create(key)
            history[key] = {str(n): loaded.get_history(max_messages=n) for n in range(0, len(loaded.messages) + 2)}
        sessions_dir = Path(manager.sessions_dir)
        root = sessions_dir.parent if kwargs else sessions_dir
        shutil.copytree(root, out / "sessions", ignore=shutil.ignore_patterns("*.lock", ".workspace-migration*"))
    if (out / "sessions").glob("*/.workspace"):
        for marker in (out / "sessions").glob("*/.workspace"):
            marker.write_text("/workspace\n")
    text = json.dumps(history, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"
    (out / "history.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"nanobot {VERSION}: {len(KEYS)} sessions -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
