"""MemoryConfig: where long-term memories live and whose they are.

The wiring (objects) lives here; the numbers (how many hits, budgets, the profile's bound)
are settings under ``session.memory`` so they travel with a session and its exports.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
import logging
import os
from typing import Any
from urllib.parse import quote

from langchain_core.runnables import Runnable
from langgraph.store.base import BaseStore

from session_graph._base.ids import MAX_ID_LENGTH, check_id_length
from session_graph.errors import ConfigurationError, StoreUnavailableError
from session_graph.llm.names import chat_model
from session_graph.memory.categories import CATEGORIES, encode_label, memory_namespace, parse_uri, tenant_owner
from session_graph.memory.filestore import FileMemoryStore
from session_graph.memory.owner_mark import check_owned

__all__ = ["MemoryConfig", "expiry", "moved_to", "run_owners", "unavailable"]

_CONNECTION_ERRORS = ("OperationalError", "InterfaceError", "PoolTimeout", "PoolClosed", "TooManyRequests")


def unavailable(error: BaseException) -> StoreUnavailableError | None:
    """A clear, retryable error for a memory store whose database connection failed (psycopg's
    ``OperationalError`` and the like, anywhere in the chain of causes), else None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = type(current)
        if kind.__module__.startswith("psycopg") and any(c.__name__ in _CONNECTION_ERRORS for c in kind.__mro__):
            return StoreUnavailableError(
                f"the memory store's database connection failed ({kind.__name__}: {str(current).strip()[:200]}). Nothing "
                "was lost: a commit's archive stays pending and the next commit() resumes it once the database is back. "
                "A LangGraph PostgresStore on one psycopg connection never reconnects after a drop; build it on a pool "
                "that checks connections: PostgresStore(ConnectionPool(dsn, kwargs={'autocommit': True, "
                "'prepare_threshold': 0, 'row_factory': dict_row}, check=ConnectionPool.check_connection))."
            )
        current = current.__cause__ or current.__context__
    return None


USER_KEYS = ("user_id", "langgraph_user_id")
AGENT_KEYS = ("agent_id", "assistant_id")
TENANT_KEYS = ("tenant_id",)
log = logging.getLogger(__name__)
_moving: ContextVar[bool] = ContextVar("session_graph_memory_moving", default=False)  # moved_to's target is being made
_told: set[str] = set()  # run tenants already warned about (once per process each; the first 1,024: the names are the caller's)


def _check_owner(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or not _utf8(value):
        raise ConfigurationError(
            f"MemoryConfig {what} must be a non-empty string (any text: an email, a path, unicode; it is encoded "
            f"into a store namespace), got {value!r:.80}."
        )
    return value


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no store can keep it
        return False
    return True


DEFAULT_TENANT = "default"
"""``SessionManager``'s default tenant: its memory is the tenant-less place (``bob``), so a config
naming it means that place too (never ``default~bob``, which no default manager reads)."""


def _check_tenant(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or any(ord(ch) < 32 or ord(ch) == 127 for ch in value[: MAX_ID_LENGTH + 1]):
        raise ConfigurationError(f"MemoryConfig tenant must be None or a non-empty string without control characters "
                                 f"(a SessionManager's tenant key), got {value!r:.80}.")
    return check_id_length(value, "MemoryConfig tenant")


@dataclass(frozen=True)
class MemoryConfig:
    """Long-term memory for sessions: a store, the user and agent they belong to.

    Args:
        store: any LangGraph ``BaseStore`` (``InMemoryStore``, ``SqliteStore``, ``PostgresStore``);
            None: a ``FileMemoryStore`` at ``path`` in OpenViking's layout, made on first use.
            Give a ``PostgresStore`` a ``psycopg_pool.ConnectionPool`` with
            ``check=ConnectionPool.check_connection``, not one connection: a single connection
            never reconnects after a drop (a commit then raises ``StoreUnavailableError``,
            retryable, until the store is rebuilt); a pool replaces a dropped connection.
        user: the user id memories of profile, preferences, entities and events belong to: any
            non-empty text (an email, ``org/42``, unicode), encoded into the namespace label
            reversibly (``categories.encode_label``: ``bob@example%2Ecom``; an id without ``.``,
            ``/``, ``~``, NUL or ``%XX`` is its own label).
        agent: the agent id cases and patterns belong to (the same rules).
        embeddings: a LangChain ``Embeddings`` for the prefilter (fused with BM25); None: BM25 only.
        path: the root of the default file store.
        model: a chat model for commits, or a name init_chat_model accepts ("openai:gpt-4o-mini");
            None: the session's own model.
        event_ttl: seconds an event is kept after it is written (its ``expires_at``; expired
            events are never hits or recalled, and ``expire()`` forgets them); None: forever.
        max_commit_calls, max_commit_tokens: one commit's budget of model calls and prompt
            tokens; beyond it the commit is ``partial`` with the reason and the next goes on.
        tenant: the tenant the user and agent belong to (``SessionManager``'s tenant; set by
            ``for_tenant``): every namespace is the tenant's own (``acme~bob``), so tenants never
            share memory, not even the agent's cases and patterns; None (or ``"default"``,
            ``SessionManager``'s default tenant, kept as None): no tenant (``bob``).
        run_tenants: the tenants a run may name as its own (``config["configurable"]["tenant_id"]``
            or the runtime context's ``tenant_id``; see ``for_run``): a collection of tenants, or a
            check ``(tenant, configurable) -> bool`` (say, against what the server's auth put in the
            run's config). A run's config is the caller's, so this is the deployer's statement of
            whom to trust. None: runs cannot name a tenant (a named one is not read; the config's,
            or its manager's, is used). A run naming a tenant it may not is refused.
    """

    store: BaseStore | None = None
    user: str = "default"
    agent: str = "default"
    embeddings: Any = None
    path: str | os.PathLike[str] = ".session_graph/memory"
    model: Runnable | str | None = None
    event_ttl: float | None = None
    max_commit_calls: int = 64
    max_commit_tokens: int = 400_000
    tenant: str | None = None
    run_tenants: Collection[str] | Callable[[str, Mapping[str, Any]], bool] | None = None
    _made: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.store is not None and not isinstance(self.store, BaseStore):
            raise ConfigurationError(
                f"MemoryConfig store must be a LangGraph BaseStore (InMemoryStore, SqliteStore, PostgresStore, "
                f"FileMemoryStore) or None, got {type(self.store).__name__}."
            )
        _check_owner(self.user, "user")
        _check_owner(self.agent, "agent")
        if _check_tenant(self.tenant) == DEFAULT_TENANT:  # a SessionManager's default tenant: the tenant-less labels
            object.__setattr__(self, "tenant", None)
        for kind in ("user", "agent"):  # over the cap: refused, unless it already owns memories (kept from before the cap)
            if len(getattr(self, kind)) > MAX_ID_LENGTH and not _moving.get() and not self._owns_memories(kind, getattr(self, kind)):
                check_id_length(getattr(self, kind), f"MemoryConfig {kind}")
        object.__setattr__(self, "run_tenants", _check_run_tenants(self.run_tenants))
        if self.embeddings is not None and not callable(getattr(self.embeddings, "embed_documents", None)):
            raise ConfigurationError(
                f"MemoryConfig embeddings must be a LangChain Embeddings (with embed_documents), "
                f"got {type(self.embeddings).__name__}."
            )
        if self.event_ttl is not None and (isinstance(self.event_ttl, bool) or not isinstance(self.event_ttl, int | float)
                                           or self.event_ttl <= 0):
            raise ConfigurationError(f"MemoryConfig event_ttl must be a positive number of seconds or None, got {self.event_ttl!r}.")
        for name in ("max_commit_calls", "max_commit_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"MemoryConfig {name} must be a whole number >= 1, got {value!r}.")
        if self.model is not None:
            object.__setattr__(self, "model", chat_model(self.model, "MemoryConfig model"))  # a name becomes its model

    def _owns_memories(self, kind: str, owner: str) -> bool:
        """Whether the store holds memories of this ``kind`` ("user" or "agent") of ``owner`` in
        this config's tenant: an id over ``MAX_ID_LENGTH`` that an older version stored under stays
        usable (its memories can be read, exported and forgotten), only a new one is refused."""
        try:
            return bool(self.memory_store.list_namespaces(prefix=(kind, tenant_owner(self.tenant, owner)), limit=1))
        except Exception:  # a store that cannot say (or is down): the cap holds
            return False

    @property
    def memory_store(self) -> BaseStore:
        """The store in use (the default file store is made once, on first use)."""
        if self.store is not None:
            return self.store
        if "store" not in self._made:
            self._made["store"] = FileMemoryStore(self.path)
        return self._made["store"]

    def namespace(self, category: str) -> tuple[str, str, str, str]:
        """Where this user's (or agent's) memories of ``category`` live: the one derivation every
        reader and writer uses (never a namespace read from stored data or a message). A label an
        older version could have written for another owner is checked first (``owner_mark``)."""
        namespace = memory_namespace(category, self.user, self.agent, self.tenant)
        if "~" in namespace[1] or "%" in namespace[1]:  # nearly all labels: these two tests only
            check_owned(self.memory_store, namespace)
        return namespace

    def place_of(self, uri: str) -> tuple[tuple[str, str, str, str], str] | None:
        """The (namespace, key) a memory URI names, in this config's own namespaces; None for a
        URI that names no memory or another owner's. Reads ``memory://user/alice/preferences/k``
        and OpenViking's ``viking://user/memories/profile.md``,
        ``viking://user/memories/preferences/k.md`` (the config's user; ``agent/`` likewise) and
        ``viking://user/alice/memories/preferences/k.md`` (the id as it is, as its label
        ``bob@example%2Ecom``, or percent-encoded ``bob%40example.com``)."""
        place = parse_uri(uri)
        if place is None and uri.startswith("viking://"):
            parts = [p for p in uri[len("viking://") :].split("/") if p]
            if len(parts) >= 3 and parts[0] in ("user", "agent") and parts[1] != "memories":
                owner, parts = parts[1], [parts[0], *parts[2:]]
            else:
                owner = None
            if len(parts) == 3 and parts[1:] == ["memories", "profile.md"]:
                parts = [parts[0], "memories", "profile", "profile.md"]
            if len(parts) == 4 and parts[1] == "memories" and parts[2] in CATEGORIES and parts[3].endswith(".md"):
                namespace = self.namespace(parts[2])
                wanted = self.user if parts[0] == "user" else self.agent  # the id, its label, or the id percent-encoded
                if namespace[0] == parts[0] and owner in (None, wanted, encode_label(wanted), quote(wanted, safe="")):
                    return namespace, parts[3][: -len(".md")]
            return None
        if place is None or place[0] != self.namespace(place[0][3]):
            return None
        return place

    def for_user(self, user: str | None = None, agent: str | None = None) -> MemoryConfig:
        """This config for another user (or agent), over the same store."""
        if (user is None or user == self.user) and (agent is None or agent == self.agent):
            return self
        return replace(self, user=self.user if user is None else user, agent=self.agent if agent is None else agent)

    def for_tenant(self, tenant: str | None) -> MemoryConfig:
        """This config within ``tenant`` (the same user and agent ids, over the same store, in
        namespaces of the tenant's own: nothing is shared with another tenant)."""
        return self if tenant == self.tenant else replace(self, tenant=tenant)

    def owners(self) -> tuple[str, str, str | None]:
        """(user, agent, tenant): whose memories this config reads and writes."""
        return self.user, self.agent, self.tenant

    def for_run(self, config: Mapping[str, Any] | None = None, context: Any = None) -> MemoryConfig:
        """This config for the run in progress: the user and agent from ``config["configurable"]``
        (``user_id``, ``agent_id``; LangGraph's config of the current run when none is given) or
        from the runtime ``context`` (an attribute or key ``user_id`` / ``agent_id``; the current
        run's when none is given), else this config's own, as langmem reads them. The tenant too
        (``tenant_id``), only where ``run_tenants`` lets runs choose it: a run's config is the
        caller's, so naming a tenant must never be enough to read its memories. Without
        ``run_tenants`` a named tenant is not read (one warning per tenant and process); the
        sessions of a manager stay its tenant's either way (only memory follows the run), and
        so does what a commit mines from them: a commit follows a run's tenant only where the
        session's config has none (``commit.session_commit.commit_context``).

        Raises:
            ConfigurationError: the run names a user or agent that cannot name a namespace (an id over
                ``MAX_ID_LENGTH`` characters: an ``InvalidKeyError`` naming the key it came from), or
                a tenant ``run_tenants`` does not let it choose.
        """
        configurable, context = _run_sources(config, context)
        owners = _named(configurable, context, USER_KEYS, AGENT_KEYS)
        for kind, keys, owner in zip(("user", "agent"), (USER_KEYS, AGENT_KEYS), owners, strict=True):
            if owner is not None and len(owner) > MAX_ID_LENGTH and not self._owns_memories(kind, owner):
                check_id_length(owner, f"the run's {' / '.join(keys)}")  # named where the run gave it
        scoped = self.for_user(*owners)
        (tenant,) = _named(configurable, context, TENANT_KEYS)
        if tenant is None or (None if tenant == DEFAULT_TENANT else tenant) == self.tenant:
            return scoped
        allowed = self.run_tenants
        if allowed is None:
            if tenant not in _told and len(_told) < 1024:
                _told.add(tenant)
                log.warning("a run names tenant_id %r, but MemoryConfig.run_tenants does not let runs choose their tenant: "
                            "memory stays tenant %r's. Set MemoryConfig(run_tenants=...) to let runs name it.", tenant[:80], self.tenant)
            return scoped
        if not (allowed(tenant, configurable) if callable(allowed) else tenant in allowed):
            raise ConfigurationError(
                f"the run names tenant {tenant[:80]!r} (its tenant_id), which MemoryConfig.run_tenants does not let it "
                "choose; nothing was read. Add the tenant to run_tenants (or make its check accept this run), or run "
                "with a manager of that tenant (SessionManager.for_tenant).")
        return scoped.for_tenant(tenant)


def _pick(source: Any, keys: tuple[str, ...], where: str) -> str | None:
    for key in keys:
        value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
        if value is not None and value != "":
            if keys == TENANT_KEYS:  # a user's or agent's length is checked by for_run (one stored before may pass)
                check_id_length(str(value), f"the run's {where} {key!r}")  # named where the run gave it
            return str(value)
    return None


def _check_run_tenants(value: Any) -> Any:
    if value is None or callable(value):
        return value
    if isinstance(value, str) or not isinstance(value, Collection):
        raise ConfigurationError(f"MemoryConfig run_tenants must be None, a collection of tenants ({{'acme', 'globex'}}) "
                                 f"or a check (tenant, configurable) -> bool, got {value!r:.80}.")
    try:
        tenants = frozenset(value)
    except TypeError:  # unhashable entries
        raise ConfigurationError(f"MemoryConfig run_tenants must hold tenant names (strings), got {value!r:.80}.") from None
    bad = [tenant for tenant in tenants if not isinstance(tenant, str) or not tenant or not tenant.isprintable()]
    if bad:
        raise ConfigurationError(f"MemoryConfig run_tenants holds {bad[0]!r:.80}, not a tenant (a non-empty string "
                                 "without control characters); remove it.")
    return frozenset(check_id_length(tenant, "a tenant in MemoryConfig run_tenants") for tenant in tenants)


def run_owners(config: Mapping[str, Any] | None = None, context: Any = None) -> tuple[str | None, str | None]:
    """(user, agent) named by a LangGraph run (see ``MemoryConfig.for_run``); None where it names none."""
    user, agent = _named(*_run_sources(config, context), USER_KEYS, AGENT_KEYS)
    return user, agent


def _named(configurable: Mapping[str, Any], context: Any, *keys: tuple[str, ...]) -> list[str | None]:
    """For each group of ``keys``: the value the run's configurable names, else its context's, else None."""
    return [_pick(configurable, group, "configurable") or (_pick(context, group, "context") if context is not None else None)
            for group in keys]


def _run_sources(config: Mapping[str, Any] | None, context: Any) -> tuple[Mapping[str, Any], Any]:
    """The run's ``configurable`` and runtime context (the current run's where not given)."""
    if config is None:
        try:
            from langgraph.config import get_config

            config = get_config()
        except Exception:  # not inside a run
            config = None
    if context is None:
        try:
            from langgraph.runtime import get_runtime

            context = get_runtime().context
        except Exception:  # not inside a run, or a run without a context
            context = None
    return (config or {}).get("configurable") or {}, context


def expiry(memory: MemoryConfig, category: str, now: str) -> str | None:
    """The ``expires_at`` a new item of ``category`` written at ``now`` gets (events with a TTL)."""
    if category != "events" or memory.event_ttl is None:
        return None
    return (datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(seconds=memory.event_ttl)).isoformat()


def moved_to(memory: MemoryConfig, tenant: str | None) -> MemoryConfig:
    """``memory.for_tenant(tenant)`` as the place its memories move to (``migrate_to_tenant``): a
    user or agent id over ``MAX_ID_LENGTH`` that ``memory`` serves (it owns memories there, stored
    before the cap) keeps its id under the tenant too, where it owns nothing yet; once they are
    moved, the tenant's config serves it the same way. A new over-cap id stays refused."""
    token = _moving.set(True)
    try:
        return memory.for_tenant(tenant)
    finally:
        _moving.reset(token)
