"""The ``sessions`` sub-commands: one function per command, each ``(manager, args) -> exit status``.

``session_graph.cli`` parses the command line, checks what it can before a store is opened, opens
the ``SessionManager`` and hands it here (``run``); the progress bar and ``--key-map`` live here too.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
import json
from pathlib import Path
import sys
from typing import Any
import warnings

from session_graph._base.progress import Progress
from session_graph.errors import DocumentError
from session_graph.stores.dsn import redact
from session_graph.stores.interop import FOREIGN_FORMATS
from session_graph.stores.manager import SessionManager
from session_graph.stores.nanobot import NanobotKeyWarning

__all__ = ["key_map", "run"]


@contextmanager
def _bar(args: argparse.Namespace, what: str) -> Iterator[Progress | None]:
    """A progress callback drawing a bar on stderr (tqdm when installed), or None when stderr
    is not a terminal or ``--no-progress`` was given."""
    if args.no_progress or not sys.stderr.isatty():
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(desc=what, unit="msg", file=sys.stderr, leave=False)

        def update(done: int, total: int | None) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            yield update
        finally:
            bar.close()
        return

    def plain(done: int, total: int | None) -> None:
        share = f"{done * 100 // total}%" if total else f"{done:,}"
        print(f"\r{what}: {share}", end="", file=sys.stderr, flush=True)

    try:
        yield plain
    finally:
        print("\r" + " " * (len(what) + 12) + "\r", end="", file=sys.stderr, flush=True)


def run(manager: SessionManager, args: argparse.Namespace) -> int:
    command: Callable[[SessionManager, argparse.Namespace], int] = _COMMANDS[args.command]
    return command(manager, args)


def _list(manager: SessionManager, args: argparse.Namespace) -> int:
    infos = manager.list_sessions()
    if args.json:
        print(json.dumps([_as_dict(info) for info in infos], indent=2, ensure_ascii=False))
    else:
        for info in infos:
            print(f"{info.key}\t{info.message_count} messages\tupdated {info.updated_at}\tcreated {info.created_at}")
        if not infos:
            print(f"no sessions in {redact(args.store)} for tenant {args.tenant!r}")
    return 0


def _show(manager: SessionManager, args: argparse.Namespace) -> int:
    with _bar(args, f"reading {args.key}") as progress:
        stats = manager.stats(args.key, progress=progress)
    roles = ", ".join(f"{role} {count}" for role, count in sorted(stats.by_role.items()))
    print(f"{stats.key}: {stats.messages} messages ({roles}); {stats.first_at} .. {stats.last_at} "
          f"({stats.duration_seconds:.0f} s); average reply {stats.average_reply_chars:.0f} chars\n")
    last = None if args.all else args.last
    if last is not None and stats.messages > last:
        print(f"... {stats.messages - last} earlier messages not shown (--last N, or --all)")
    print(manager.export(args.key, "txt", last=last), end="")
    return 0


def _export(manager: SessionManager, args: argparse.Namespace) -> int:
    if args.format in FOREIGN_FORMATS:
        if args.last is not None:
            raise ValueError(f"--last is not available with --format {args.format}: it writes the whole session.")
        written = manager.export(args.key, args.format, args.out)
        print(f"wrote {written}")
        return 0
    with _bar(args, f"exporting {args.key}") as progress:
        text = manager.export(args.key, args.format, last=args.last, progress=progress)
    print(text)
    return 0


def _stored(manager: SessionManager, key: str) -> Any:
    session = manager.get(key)
    if session is None:
        raise KeyError(f"no stored session {key!r} for tenant {manager.tenant!r}")
    return session


def _trace(manager: SessionManager, args: argparse.Namespace) -> int:
    trace = _stored(manager, args.key).trace
    if args.json:
        print(json.dumps(trace.records(), indent=2, ensure_ascii=False, default=str))
        return 0
    for record in trace:
        print(record.describe())
    if not len(trace):
        print(f"no resize recorded for {args.key} (a store keeps the newest ones with each save)")
    return 0


def _draw(manager: SessionManager, args: argparse.Namespace) -> int:
    session = _stored(manager, args.key)
    route = session.trace[-1] if len(session.trace) and not args.no_route else None
    svg = bool(args.out) and Path(args.out).suffix.lower() == ".svg"
    drawing = session.draw(format="svg" if svg else "mermaid", highlight=route)
    if not args.out:
        print(drawing.mermaid)
        return 0
    print(f"wrote {drawing.save(args.out)}" + (f" (route of the resize at turn {route.turn})" if route is not None else ""))
    return 0


def _on_existing(args: argparse.Namespace) -> str:
    return "skip" if args.skip_existing else "replace" if args.replace else "error"


def _import(manager: SessionManager, args: argparse.Namespace) -> int:
    importer = manager.import_openviking if args.command == "import-openviking" else \
        (lambda path, on_existing: manager.import_document(path, key=args.key, on_existing=on_existing))
    keys = importer(args.path, on_existing=_on_existing(args))
    for key in keys:
        print(f"imported {key}")
    if not keys:
        print("imported nothing: every session is stored already (--replace to overwrite)")
    return 0


def _delete(manager: SessionManager, args: argparse.Namespace) -> int:
    if not manager.delete(args.key):
        print(f"session-graph: no session {args.key!r}", file=sys.stderr)
        return 1
    print(f"deleted {args.key}")
    return 0


def _search(manager: SessionManager, args: argparse.Namespace) -> int:
    if args.substring:
        hits = manager.search(args.text, args.k, key=args.key, mode="substring")
    else:
        hits = manager.search(args.text, args.k, key=args.key, around=args.around)
    for hit in hits:
        score = "" if args.substring else f"{hit.score:.3f}\t"
        for near in (n for n in hit.neighbours if n.seq < hit.seq):
            print(f"  {near.key}#{near.seq}\t{near.role}\t{near.ts}\t{near.text[:120]!r}")
        print(f"{hit.key}#{hit.seq}\t{score}{hit.role}\t{hit.ts}\t{hit.text[:120]!r}")
        for near in (n for n in hit.neighbours if n.seq > hit.seq):
            print(f"  {near.key}#{near.seq}\t{near.role}\t{near.ts}\t{near.text[:120]!r}")
    if not hits:
        print(f"no message contains {args.text!r}" if args.substring else f"no message matches {args.text!r}")
    return 0


def key_map(path: str | None) -> dict[str, str]:
    """``--key-map``: a JSON object {file name or stem: key}."""
    if not path:
        return {}
    try:
        names = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DocumentError(f"--key-map {path}: {error}; give a JSON object {{file name: key}}.") from error
    if not isinstance(names, dict) or not all(isinstance(v, str) and v for v in names.values()):
        raise DocumentError(f"--key-map {path} must be a JSON object {{file name: key}} with non-empty string keys.")
    return names


def _import_nanobot(manager: SessionManager, args: argparse.Namespace) -> int:
    names = getattr(args, "key_names", None) or key_map(args.key_map)
    on_existing = _on_existing(args)
    with _bar(args, "importing") as progress, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NanobotKeyWarning)
        keys = manager.import_nanobot(args.path, key_for=lambda file: names.get(file.name) or names.get(file.stem),
                                      on_existing=on_existing, progress=progress)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    for key in keys:
        print(f"imported {key}")
    if not keys:
        print("imported nothing: every session is stored already (--replace to overwrite)")
    return 0


_COMMANDS: dict[str, Callable[[SessionManager, argparse.Namespace], int]] = {
    "list": _list, "show": _show, "export": _export, "delete": _delete, "search": _search, "import-nanobot": _import_nanobot,
    "trace": _trace, "draw": _draw, "import": _import, "import-openviking": _import,
}


def _as_dict(info: object) -> dict[str, object]:
    return {name: getattr(info, name) for name in info.__slots__}  # type: ignore[attr-defined]
