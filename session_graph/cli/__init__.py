"""The command line: ``demo`` (the default) and ``sessions`` to look after stored sessions.

::

    session-graph                                   the offline demo (also: python -m session_graph)
    session-graph demo [--turns N] [--plot out.png]
    session-graph sessions list [--json]            (--store PATH|DSN, --tenant T: before or after the command)
    session-graph sessions show KEY [--last N | --all]
    session-graph sessions export KEY [--format json|yaml|md|txt] [--last N]
    session-graph sessions export KEY --format nanobot|openviking --out DIR
    session-graph sessions search TEXT [-k N] [--key KEY] [--around N] [--substring]
    session-graph sessions trace KEY [--json]       each resize of the stored session, one line each
    session-graph sessions draw KEY [--out FILE.svg|FILE.mmd] [--no-route]
    session-graph sessions delete KEY
    session-graph sessions import FILE [--key KEY] [--skip-existing | --replace]   (a json/yaml export)
    session-graph sessions import-nanobot PATH [--skip-existing | --replace] [--key-map FILE]
    session-graph sessions import-openviking PATH [--skip-existing | --replace]
    session-graph memory migrate-tenant --tenant T --user U [--from-user OLD] [--dry-run] [--memory STORE]

The store is a directory (JSONL, default ``./.session_graph``), a ``.db``/``sqlite:///`` path,
or a ``postgresql://`` DSN; ``SESSION_GRAPH_STORE`` sets the default. Read commands never
create anything. Long commands show a progress bar on a terminal (tqdm when installed);
``-v`` prints the package's log (resizes, loads, store recoveries) on stderr, each line
naming its module's logger (``session_graph.stores.manager``...). Output piped into ``head``
ends quietly.

This package parses the command line and opens the store; each ``sessions`` sub-command is a
function in ``cli/commands.py``; the ``memory`` sub-commands live in ``cli/memory.py``.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
import sys
import time
from typing import Any

from session_graph.cli.commands import key_map, run
from session_graph.cli.memory import add_memory_parser, memory_command
from session_graph.errors import SessionGraphError
from session_graph.stores.base import check_key
from session_graph.stores.dsn import redact
from session_graph.stores.interop import FOREIGN_FORMATS
from session_graph.stores.manager import SessionManager
from session_graph.stores.nanobot import nanobot_files

__all__ = ["main"]

log = logging.getLogger(__name__)
_WRITES = ("import", "import-nanobot", "import-openviking")  # every other command only reads: it never creates a store
_DRAWINGS = (".svg", ".mmd", ".md")
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
    commands = top.add_subparsers(dest="area", metavar="{demo,sessions,memory}")
    add_arguments(commands.add_parser("demo", help="the offline demo (the default): resizes in four modes, one line each"))
    common = _common()
    sessions = commands.add_parser("sessions", parents=[common], help="look after stored sessions: list, show, export...",
                                   description="Look after stored sessions.")
    actions = sessions.add_subparsers(dest="command", required=True,
                                      metavar="{list,show,export,search,trace,draw,delete,import,import-nanobot,import-openviking}")
    actions.add_parser("list", parents=[common], help="sessions, newest first").add_argument("--json", action="store_true")
    show = actions.add_parser("show", parents=[common], help=f"stats and the newest messages (--last {_SHOW_LAST})")
    show.add_argument("key")
    how_many = show.add_mutually_exclusive_group()
    how_many.add_argument("--last", type=int, default=_SHOW_LAST, metavar="N", help=f"newest N messages (default {_SHOW_LAST})")
    how_many.add_argument("--all", action="store_true", help="every message")
    export = actions.add_parser("export", parents=[common], help="one session as json, yaml, md or txt; or nanobot/openviking files")
    export.add_argument("key")
    export.add_argument("--format", choices=["json", "yaml", "md", "txt", "nanobot", "openviking"], default="md",
                        help="json and yaml load back (sessions import, Session.from_json); nanobot and openviking "
                             "write that system's files under --out")
    export.add_argument("--last", type=int, default=None, metavar="N", help="only the newest N messages")
    export.add_argument("--out", metavar="DIR", help="the directory nanobot/openviking files are written into")
    search = actions.add_parser("search", parents=[common], help="the messages that best match TEXT (ranked)")
    search.add_argument("text")
    search.add_argument("-k", type=int, default=10, metavar="N", help="how many hits (default 10)")
    search.add_argument("--key", default=None, help="only this session")
    search.add_argument("--around", type=int, default=0, metavar="N", help="show N messages either side of each hit")
    search.add_argument("--substring", action="store_true", help="messages containing TEXT, in store order")
    trace = actions.add_parser("trace", parents=[common], help="each resize of a stored session: when, why, effect, cost")
    trace.add_argument("key")
    trace.add_argument("--json", action="store_true", help="the trace records as JSON")
    draw = actions.add_parser("draw", parents=[common], help="a stored session's resize graph, its last resize's route drawn over it")
    draw.add_argument("key")
    draw.add_argument("--out", metavar="FILE", help="write .svg or .mmd (Mermaid) here; without it, print the Mermaid text")
    draw.add_argument("--no-route", action="store_true", help="the graph alone, without the last resize's route")
    actions.add_parser("delete", parents=[common], help="remove a session").add_argument("key")
    document = actions.add_parser("import", parents=[common], help="one session from a json/yaml export (or Session.to_json())")
    document.add_argument("path", metavar="FILE")
    document.add_argument("--key", default=None, help="store it under this key (default: the document's)")
    _again(document)
    viking = actions.add_parser("import-openviking", parents=[common], help="import OpenViking session directories")
    viking.add_argument("path")
    _again(viking)
    nanobot = actions.add_parser("import-nanobot", parents=[common], help="import nanobot session files (0.1.x-0.3.x)",
                                 description="Import nanobot sessions: a file, a sessions folder, or 0.3.x's sessions root.")
    nanobot.add_argument("path")
    _again(nanobot)
    nanobot.add_argument("--key-map", metavar="FILE", help="JSON {file name: key} for 0.1.x files, which hold no key")
    add_memory_parser(commands)
    return top


def _again(command: argparse.ArgumentParser) -> None:
    again = command.add_mutually_exclusive_group()
    again.add_argument("--skip-existing", action="store_true", help="leave sessions already stored as they are")
    again.add_argument("--replace", action="store_true", help="replace sessions already stored")


def _defaults(args: argparse.Namespace) -> argparse.Namespace:
    for name, value in (("store", os.environ.get("SESSION_GRAPH_STORE", ".session_graph")), ("tenant", "default"),
                        ("verbose", False), ("no_progress", False)):
        if not hasattr(args, name):
            setattr(args, name, value)
    return args


def sessions(args: argparse.Namespace) -> int:
    """``session-graph sessions ...``; returns the exit status."""
    args = _defaults(args)
    handler = _verbose() if args.verbose else None
    try:
        for name in ("key",):  # a bad key is named before any store is opened
            if getattr(args, name, None) is not None:
                check_key(getattr(args, name))
        if getattr(args, "last", None) is not None and args.last < 0:
            raise ValueError(f"--last must be 0 or more, got {args.last}.")
        if args.command == "import-nanobot":  # a bad path or key map is named before the store is created
            nanobot_files(args.path)
            args.key_names = key_map(args.key_map)
        _check_outputs(args)
        started = time.perf_counter()
        manager = SessionManager(args.store, tenant=args.tenant, create=args.command in _WRITES)
        log.info("store %s (%s), tenant %r", redact(args.store), type(manager.store).__name__, args.tenant)
        try:
            return run(manager, args)
        finally:
            manager.close()
            log.info("%s took %.3f s", args.command, time.perf_counter() - started)
    except BrokenPipeError:
        raise  # main ends quietly
    except (SessionGraphError, KeyError, ValueError, OSError) as error:
        text = error.args[0] if isinstance(error, KeyError) and error.args else str(error)  # no repr quotes
        print(f"session-graph: {text}", file=sys.stderr)
        return 1
    finally:
        if handler is not None:  # as it was before: a program calling main() keeps its own logging
            logging.getLogger("session_graph").removeHandler(handler)
            logging.getLogger("session_graph").setLevel(handler.previous_level)  # type: ignore[attr-defined]


def _memory(args: argparse.Namespace) -> int:
    """``session-graph memory ...``: errors are one line on stderr and status 1, as for ``sessions``."""
    try:
        return memory_command(args)
    except (SessionGraphError, ValueError, OSError) as error:
        print(f"session-graph: {error}", file=sys.stderr)
        return 1


def _verbose() -> logging.Handler:
    """``-v``: every package logger (children of ``session_graph``) on stderr, each line naming its logger."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s %(message)s"))
    root = logging.getLogger("session_graph")
    handler.previous_level = root.level  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return handler


def _check_outputs(args: argparse.Namespace) -> None:
    """Options naming files are checked before any store is opened."""
    if args.command == "export" and args.format in FOREIGN_FORMATS and not args.out:
        raise ValueError(f"--format {args.format} writes files: give --out DIR.")
    if args.command == "export" and args.out and args.format not in FOREIGN_FORMATS:
        raise ValueError(f"--out is for --format nanobot or openviking; --format {args.format} prints to stdout.")
    if args.command == "draw" and args.out and Path(args.out).suffix.lower() not in _DRAWINGS:
        raise ValueError(f"--out {args.out}: write a drawing as .svg or .mmd (Mermaid text).")
    if args.command in ("import", "import-openviking") and not Path(args.path).exists():
        raise ValueError(f"{args.path} does not exist.")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``session-graph`` and ``python -m session_graph``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["demo", *argv]  # no command: the demo (its options may come without the word)
    try:
        args: Any = parser().parse_args(argv)
        if args.area == "sessions":
            code = sessions(args)
        elif args.area == "memory":
            code = _memory(args)
        else:
            from session_graph.demo import run

            code = run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return code
    except BrokenPipeError:
        # ``session-graph ... | head``: the reader left. Point stdout at devnull so the interpreter's
        # final flush does not fail again, and end quietly (as the Python docs advise).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
