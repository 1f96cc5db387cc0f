"""Models as users name them: a chat model, a chat ``Runnable``, or a string such as
``"openai:gpt-4o-mini"`` that langchain's ``init_chat_model`` accepts.

Every place that takes a model (``Session(model=...)``, ``ModelMemoUpdater``,
``ModelSummarizer``, ``MemoryConfig(model=...)``) goes through :func:`chat_model`. A string is
resolved when it is given, by importing langchain only then (langchain is the optional
``agents`` extra, and the provider's package, e.g. ``langchain-openai``, is the user's choice).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable

from session_graph.errors import ConfigurationError

__all__ = ["ModelLike", "chat_model"]

ModelLike = Runnable | str
"""What a model argument accepts: a chat model or chat Runnable, or an ``init_chat_model`` string."""


def chat_model(model: Any, what: str = "model") -> Runnable:
    """The chat Runnable ``model`` names.

    Args:
        model: a chat model or chat Runnable (``with_retry()``, ``with_fallbacks()`` work), or a
            string ``init_chat_model`` accepts (``"openai:gpt-4o-mini"``, ``"anthropic:claude-sonnet-4-5"``).
        what: how the error names the argument.

    Raises:
        ConfigurationError: not a Runnable or a string; langchain is not installed; or
            ``init_chat_model`` refused the string (its reason is quoted).

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> fake = FakeListChatModel(responses=["ok"])
        >>> chat_model(fake) is fake
        True
    """
    if isinstance(model, Runnable):
        return model
    if not isinstance(model, str):
        raise ConfigurationError(
            f"{what} must be a langchain-core chat model or chat Runnable (model.with_retry() and "
            f"model.with_fallbacks([...]) work), or a model name init_chat_model accepts such as "
            f"'openai:gpt-4o-mini'; got {type(model).__name__}."
        )
    name = model.strip()
    if not name:
        raise ConfigurationError(f"{what} is an empty string; name a model such as 'openai:gpt-4o-mini'.")
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as error:
        raise ConfigurationError(
            f"{what}={model!r} is a model name, which needs langchain's init_chat_model: "
            f'pip install "session_graph[agents]" (and the provider\'s package, e.g. langchain-openai), '
            f"or pass a chat model object instead."
        ) from error
    try:
        resolved = init_chat_model(name)
    except Exception as error:  # ValueError (unknown provider), ImportError (provider package), validation
        raise ConfigurationError(f"{what}={model!r}: init_chat_model could not make this model: {error}") from error
    if not isinstance(resolved, Runnable):  # pragma: no cover - init_chat_model returns chat models
        raise ConfigurationError(f"{what}={model!r}: init_chat_model returned {type(resolved).__name__}, not a chat model.")
    return resolved
