"""The six memory categories, who owns each, and the deterministic keys items live at.

============  =======  =========  ==========================================
category      owner    mergeable  key
============  =======  =========  ==========================================
profile       user     yes        ``"profile"`` (one bounded document)
preferences   user     yes        ``slug(topic)``
entities      user     yes        ``slug(name)``
events        user     no         ``"ev_" + sha256(normalized content)[:16]``
cases         agent    no         ``"case_" + sha256(normalized content)[:16]``
patterns      agent    yes        ``slug(name)``
============  =======  =========  ==========================================

Mergeable categories take CREATE, UPDATE, MERGE and SKIP; events and cases are never
modified after creation (CREATE or SKIP only). Namespaces follow OpenViking's tree:
``(owner_kind, owner_id, "memories", category)``; replaced texts are kept under
``(owner_kind, owner_id, "memories_history", category)``. A tenant's owners are
``tenant~id`` (``tenant_owner``): tenants never share a namespace. Ids and tenants of any text are
encoded into labels (``encode_label``), reversibly; an id without ``.``, ``/``, ``~``, NUL or a
``%XX`` is its own label, as it always was.
"""

from __future__ import annotations

from dataclasses import dataclass
import hashlib
import re
from typing import Literal
import unicodedata

__all__ = [
    "CATEGORIES",
    "OPS",
    "Category",
    "CategoryRule",
    "content_hash",
    "decode_label",
    "encode_label",
    "history_namespace",
    "item_key",
    "memory_namespace",
    "memory_uri",
    "normalize",
    "owner_of_label",
    "parse_uri",
    "slug",
    "tenant_owner",
]

Category = Literal["profile", "preferences", "entities", "events", "cases", "patterns"]
OPS = ("create", "update", "merge", "skip")


@dataclass(frozen=True, slots=True)
class CategoryRule:
    """What a category allows.

    Attributes:
        name: the category.
        owner: ``"user"`` or ``"agent"``.
        mergeable: whether items change after creation (UPDATE and MERGE allowed).
        prefix: the key prefix of content-hashed items (events, cases).
        question: what the category answers (told to the extraction model).
    """

    name: str
    owner: Literal["user", "agent"]
    mergeable: bool
    prefix: str
    question: str

    @property
    def ops(self) -> tuple[str, ...]:
        """The decisions allowed for this category."""
        return OPS if self.mergeable else ("create", "skip")


CATEGORIES: dict[str, CategoryRule] = {
    rule.name: rule
    for rule in (
        CategoryRule("profile", "user", True, "", "who the user is (stable facts: role, background, location)"),
        CategoryRule("preferences", "user", True, "", "what the user prefers, one topic per item"),
        CategoryRule("entities", "user", True, "", "what a thing, person or project is and its current state"),
        CategoryRule("events", "user", False, "ev_", "what happened or is planned, with when"),
        CategoryRule("cases", "agent", False, "case_", "a problem met and how it was solved"),
        CategoryRule("patterns", "agent", True, "", "a reusable way of working for similar situations"),
    )
}

_SLUG = re.compile(r"[^\w]+", re.UNICODE)


def normalize(text: str) -> str:
    """Text as compared for duplicates: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def slug(text: str) -> str:
    """A merge key as a stable, file-safe slug (``"Editor theme"`` -> ``"editor_theme"``; CJK kept)."""
    value = _SLUG.sub("_", normalize(text)).strip("_")
    return value[:80] or "item"


def content_hash(text: str) -> str:
    """The 16-hex-digit SHA-256 of normalized text."""
    return hashlib.sha256(normalize(text).encode()).hexdigest()[:16]


def item_key(category: str, merge_key: str | None, content: str) -> str:
    """The deterministic key of a new item: the profile's one key, a slug, or a content hash."""
    rule = CATEGORIES[category]
    if category == "profile":
        return "profile"
    if not rule.mergeable:
        return rule.prefix + content_hash(content)
    return slug(merge_key or content[:60])


def memory_namespace(category: str, user: str, agent: str, tenant: str | None = None) -> tuple[str, str, str, str]:
    """Where a category's items live for this user and agent (of ``tenant``: see ``tenant_owner``)."""
    rule = CATEGORIES[category]
    return (rule.owner, tenant_owner(tenant, user if rule.owner == "user" else agent), "memories", category)


_ESCAPE = re.compile(r"[./~\x00]|%(?=[0-9A-Fa-f]{2})")  # no label holds . (LangGraph), / (paths), ~ (the tenant join), NUL
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")


def encode_label(text: str) -> str:
    """``text`` as a namespace label, reversibly (``decode_label``): ``.``, ``/``, ``~``, NUL and a
    ``%`` that would read as an escape become ``%XX``; everything else is kept as it is, so
    ``bob@example.com`` is ``bob@example%2Ecom`` and an id without those characters is its own label
    (the labels stores written before hold). The one encoding of user, agent and tenant ids."""
    return _ESCAPE.sub(lambda found: f"%{ord(found.group()):02X}", text)


def decode_label(label: str) -> str:
    """The text ``encode_label`` made ``label`` from."""
    return _ESCAPED.sub(lambda found: chr(int(found.group(1), 16)), label)


def tenant_owner(tenant: str | None, owner: str) -> str:
    """The owner label of a user or agent id: ``encode_label(id)``; of a tenant's, ``acme~bob``
    (both encoded: no encoded text holds ``~``, so two tenants or a tenant and a tenant-less id
    never share a label). ``owner_of_label`` reads it back."""
    if tenant is None:
        return encode_label(owner)
    return f"{encode_label(tenant)}~{encode_label(owner)}"


def owner_of_label(label: str) -> tuple[str | None, str]:
    """(tenant or None, id) of an owner label (``tenant_owner``'s inverse)."""
    tenant, joined, owner = label.partition("~")
    return (decode_label(tenant), decode_label(owner)) if joined else (None, decode_label(label))


def history_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """Where replaced texts of a namespace's items are kept (not searched)."""
    return (namespace[0], namespace[1], "memories_history", *namespace[3:])


def memory_uri(namespace: tuple[str, ...], key: str) -> str:
    """``memory://user/alice/preferences/editor_theme``: how parts and ``used()`` name an item."""
    return f"memory://{namespace[0]}/{namespace[1]}/{namespace[3]}/{key}"


def parse_uri(uri: str) -> tuple[tuple[str, str, str, str], str] | None:
    """The (namespace, key) of a memory URI, or None for any other URI."""
    if not uri.startswith("memory://"):
        return None
    parts = uri[len("memory://") :].split("/")
    if len(parts) != 4 or parts[0] not in ("user", "agent") or parts[2] not in CATEGORIES or not all(parts):
        return None
    return (parts[0], parts[1], "memories", parts[2]), parts[3]
