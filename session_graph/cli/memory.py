"""The ``memory`` sub-commands: ``migrate-tenant`` moves a user's memories written before tenancy
under a tenant (``memory.migrate.migrate_to_tenant``), with ``--dry-run`` listing what it would move.

::

    session-graph memory migrate-tenant --tenant T --user U [--from-user OLD | --from-label LABEL | --adopt [--agent A]] [--dry-run] [--json]
                                        [--memory DIR | FILE.db | sqlite:///FILE | postgresql://...]

The memory store is a ``FileMemoryStore`` directory (default ``$SESSION_GRAPH_MEMORY`` or
``.session_graph/memory``, ``MemoryConfig``'s default), a LangGraph ``SqliteStore`` file or a
``PostgresStore`` DSN. A store that does not exist is an error, never created.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
import contextlib
import json
import os
from pathlib import Path
import sqlite3
from typing import Any

from langgraph.store.base import BaseStore

from session_graph.memory.config import MemoryConfig
from session_graph.memory.filestore import FileMemoryStore
from session_graph.memory.migrate import adopt_unmarked, migrate_to_tenant
from session_graph.stores.dsn import redact

__all__ = ["add_memory_parser", "memory_command"]

_SQLITE = (".db", ".sqlite", ".sqlite3")


def add_memory_parser(commands: Any) -> None:
    """``session-graph memory ...`` on the top-level sub-parsers."""
    memory = commands.add_parser("memory", help="look after long-term memory: migrate-tenant",
                                 description="Look after long-term memory stores.")
    actions = memory.add_subparsers(dest="command", required=True, metavar="{migrate-tenant}")
    migrate = actions.add_parser(
        "migrate-tenant", help="move a user's memories written before tenancy under a tenant (items and history)",
        description="Move the memories a user kept outside any tenant (at user/<from-user>/...) into the user's "
                    "namespaces within a tenant (user/<tenant>~<user>/...), with their version history. Idempotent; "
                    "an item the tenant already holds with other content is left in place and reported.")
    migrate.add_argument("--memory", default=os.environ.get("SESSION_GRAPH_MEMORY", ".session_graph/memory"),
                         help="the memory store: a FileMemoryStore directory, a SqliteStore .db file or sqlite:/// URL, "
                              "or a postgresql:// DSN (default: $SESSION_GRAPH_MEMORY or .session_graph/memory)")
    migrate.add_argument("--tenant", default=None, help="the tenant to move the memories under (required unless --from-label)")
    migrate.add_argument("--user", required=True, help="the user id they belong to within the tenant")
    migrate.add_argument("--from-user", default=None,
                         help="the id whose tenant-less place holds them (default: --user; the tenant's id for what "
                              "SessionManager.for_tenant(tenant) wrote as its user before tenancy)")
    migrate.add_argument("--from-label", default=None,
                         help="instead of --from-user, the old place's owner label as stored: for an id holding '~' or "
                              "a '%%XX', written before as the id itself (without --tenant: moved to the id's own label)")
    migrate.add_argument("--adopt", action="store_true",
                         help="instead of moving: mark the items an older version wrote at the label of --user (within "
                              "--tenant; --agent's too) as theirs, when an ambiguous label ('~' or '%%XX') is refused and "
                              "they are that owner's (memory.migrate.adopt_unmarked)")
    migrate.add_argument("--agent", default="default", help="with --adopt: the agent id whose cases and patterns to adopt")
    migrate.add_argument("--dry-run", action="store_true", help="list what would move; change nothing")
    migrate.add_argument("--json", action="store_true", help="the records as JSON")


def memory_command(args: argparse.Namespace) -> int:
    """``session-graph memory ...``; returns the exit status (errors propagate to ``cli.main``)."""
    if args.adopt:
        with _open(args.memory) as store:
            adopted = adopt_unmarked(MemoryConfig(store=store, user=args.user, agent=args.agent, tenant=args.tenant),
                                     dry_run=args.dry_run)
        for record in adopted:
            print(f"adopt\t{record['category']}/{record['key']}\t{record['namespace']}")
        print(f"{'would adopt' if args.dry_run else 'adopted'} {len(adopted)}" + (" (dry run: nothing changed)" if args.dry_run else ""))
        return 0
    with _open(args.memory) as store:
        report = migrate_to_tenant(MemoryConfig(store=store, user=args.user), args.tenant, from_user=args.from_user,
                                   from_label=args.from_label, dry_run=args.dry_run)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    for record in report:
        print(f"{record['action']}\t{record['kind']}\t{record['category']}/{record['key']}\t{record['from']} -> {record['to']}")
    counts = {action: sum(r["action"] == action for r in report) for action in ("move", "same", "conflict")}
    verb = "would move" if args.dry_run else "moved"
    print(f"{verb} {counts['move']}, already there {counts['same']}, conflicts left in place {counts['conflict']}"
          + (" (dry run: nothing changed)" if args.dry_run else ""))
    return 0


@contextlib.contextmanager
def _open(where: str) -> Iterator[BaseStore]:
    """The memory store ``where`` names; never created."""
    if where.startswith(("postgresql://", "postgres://")):
        from langgraph.store.postgres import PostgresStore  # an optional dependency: only for this store

        with PostgresStore.from_conn_string(where) as store:
            yield store
        return
    path = Path(where[len("sqlite:///") :] if where.startswith("sqlite:///") else where)
    if where.startswith("sqlite:///") or path.suffix.lower() in _SQLITE:
        if not path.is_file():
            raise ValueError(f"no SQLite memory store at {redact(where)}; give --memory an existing store.")
        from langgraph.store.sqlite import SqliteStore  # an optional dependency: only for this store

        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            yield SqliteStore(conn)
        finally:
            conn.close()
        return
    if not path.is_dir():
        raise ValueError(f"no memory store directory at {where}; give --memory an existing store.")
    yield FileMemoryStore(path)
