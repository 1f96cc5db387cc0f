"""The command line: ``demo`` (the default) and ``sessions`` to look after stored sessions.

::

    session-graph                                   the offline demo (also: python -m session_graph)
    session-graph demo [--turns N] [--plot out.png]
    session-graph sessions list [--json]            (--store PATH|DSN, --tenant T: before or after the command)
    session-graph sessions show KEY [--last N | --all]
    session-graph sessions export KEY [--format json|yaml|md|txt] [--last N]
    session-graph sessions search TEXT
    session-graph sessions delete KEY
    session-graph sessions import-nanobot PATH [--skip-existing | --replace] [--key-map FILE]

The store is a directory (JSONL, default ``./.session_graph``), a ``.db``/``sqlite:///`` path,
or a ``postgresql://`` DSN; ``SESSION_GRAPH_STORE`` sets the default. Read commands never
create anything. Long commands show a progress bar on a terminal (tqdm when installed);
``-v`` prints the package's log (resizes, loads, store recoveries) on stderr.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
import json
import logging
import os
from pathlib import Path
import sys
from typing import Any
import warnings

from session_graph._base.progress import Progress
from session_graph.errors import DocumentError, SessionGraphError
from session_graph.stores.base import check_key
from session_graph.stores.dsn import redact
from session_graph.stores.manager import SessionManager
from session_graph.stores.nanobot import NanobotKeyWarning, nanobot_files

__all__ = ["main"]

_WRITES = ("import-nanobot",)  # every other command only reads: it never creates a store
_SHOW_LAST = 20


def _common() -> argparse.ArgumentParser:
    """Options every sessions command takes, before or after its name (no defaults here:
    a value given at either place survives; ``_defaults`` fills the rest)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS,
                        help="a directory (JSONL), a .db file or sqlite:/// URL, or a postgresql:// DSN "
                             "(default: $SESSION_GRAPH_STORE or ./.session_graph)")
    common.add_argument("--tenant", default=argparse.SUPPRESS, help="the tenant whose sessions to see (default: default)")
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="print the package's log (loads, resizes, store recoveries) on stderr")
    common.add_argument("--no-progress", action="store_true", default=argparse.SUPPRESS, help="no progress bar")
    return common


def parser() -> argparse.ArgumentParser:
    """The whole command line (``session-graph --help``)."""
    from session_graph.demo import add_arguments

    top = argparse.ArgumentParser(
        prog="session-graph",
        description="session_graph: keep an LLM agent's conversation inside its context budget. "
                    "Without a command, runs the offline demo.",
    )
    commands = top.add_subparsers(dest="area", metavar="{demo,sessions}")
    add_arguments(commands.add_parser("demo", help="the offline demo (the default): resizes in four modes, one line each"))
    common = _common()
    sessions = commands.add_parser("sessions", parents=[common], help="look after stored sessions: list, show, export...",
                                   description="Look after stored sessions.")
    actions = sessions.add_subparsers(dest="command", required=True, metavar="{list,show,export,search,delete,import-nanobot}")
    actions.add_parser("list", parents=[common], help="sessions, newest first").add_argument("--json", action="store_true")
    show = actions.add_parser("show", parents=[common], help=f"stats and the newest messages (--last {_SHOW_LAST})")
    show.add_argument("key")
    how_many = show.add_mutually_exclusive_group()
    how_many.add_argument("--last", type=int, default=_SHOW_LAST, metavar="N", help=f"newest N messages (default {_SHOW_LAST})")
    how_many.add_argument("--all", action="store_true", help="every message")
    export = actions.add_parser("export", parents=[common], help="one session as json, yaml, md or txt")
    export.add_argument("key")
    export.add_argument("--format", choices=["json", "yaml", "md", "txt"], default="md")
    export.add_argument("--last", type=int, default=None, metavar="N", help="only the newest N messages")
    actions.add_parser("search", parents=[common], help="messages containing TEXT").add_argument("text")
    actions.add_parser("delete", parents=[common], help="remove a session").add_argument("key")
    nanobot = actions.add_parser("import-nanobot", parents=[common], help="import nanobot session files (0.1.x-0.3.x)",
                                 description="Import nanobot sessions: a file, a sessions folder, or 0.3.x's sessions root.")
    nanobot.add_argument("path")
    again = nanobot.add_mutually_exclusive_group()
    again.add_argument("--skip-existing", action="store_true", help="leave sessions already stored as they are")
    again.add_argument("--replace", action="store_true", help="replace sessions already stored")
    nanobot.add_argument("--key-map", metavar="FILE", help="JSON {file name: key} for 0.1.x files, which hold no key")
    return top


def _defaults(args: argparse.Namespace) -> argparse.Namespace:
    for name, value in (("store", os.environ.get("SESSION_GRAPH_STORE", ".session_graph")), ("tenant", "default"),
                        ("verbose", False), ("no_progress", False)):
        if not hasattr(args, name):
            setattr(args, name, value)
    return args


def sessions(args: argparse.Namespace) -> int:
    """``session-graph sessions ...``; returns the exit status."""
    args = _defaults(args)
    if args.verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("session_graph: %(levelname)s %(message)s"))
        logging.getLogger("session_graph").addHandler(handler)
        logging.getLogger("session_graph").setLevel(logging.INFO)
    try:
        for name in ("key",):  # a bad key is named before any store is opened
            if getattr(args, name, None) is not None:
                check_key(getattr(args, name))
        if getattr(args, "last", None) is not None and args.last < 0:
            raise ValueError(f"--last must be 0 or more, got {args.last}.")
        if args.command == "import-nanobot":  # a bad path or key map is named before the store is created
            nanobot_files(args.path)
            args.key_names = _key_map(args.key_map)
        manager = SessionManager(args.store, tenant=args.tenant, create=args.command in _WRITES)
        try:
            return _run(manager, args)
        finally:
            manager.close()
    except (SessionGraphError, KeyError, ValueError) as error:
        print(f"session-graph: {str(error).strip(chr(39))}", file=sys.stderr)
        return 1


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


def _run(manager: SessionManager, args: argparse.Namespace) -> int:
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
    with _bar(args, f"exporting {args.key}") as progress:
        text = manager.export(args.key, args.format, last=args.last, progress=progress)
    print(text)
    return 0


def _delete(manager: SessionManager, args: argparse.Namespace) -> int:
    if not manager.delete(args.key):
        print(f"session-graph: no session {args.key!r}", file=sys.stderr)
        return 1
    print(f"deleted {args.key}")
    return 0


def _search(manager: SessionManager, args: argparse.Namespace) -> int:
    hits = manager.search(args.text)
    for hit in hits:
        print(f"{hit.key}#{hit.seq}\t{hit.role}\t{hit.ts}\t{hit.text[:120]!r}")
    if not hits:
        print(f"no message contains {args.text!r}")
    return 0


def _key_map(path: str | None) -> dict[str, str]:
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
    names = getattr(args, "key_names", None) or _key_map(args.key_map)
    on_existing = "skip" if args.skip_existing else "replace" if args.replace else "error"
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
}


def _as_dict(info: object) -> dict[str, object]:
    return {name: getattr(info, name) for name in info.__slots__}  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``session-graph`` and ``python -m session_graph``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["demo", *argv]  # no command: the demo (its options may come without the word)
    args: Any = parser().parse_args(argv)
    if args.area == "sessions":
        return sessions(args)
    from session_graph.demo import run

    return run(args)
