"""The request the middleware hands the model: a copy as ``ModelRequest.override`` makes it
(every field, the original untouched), without its deprecation warnings; a subclass keeps its own."""

from __future__ import annotations

from dataclasses import fields
import warnings

from agents_util import model
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import HumanMessage, SystemMessage

from session_graph.integrations.middleware import _override


def _request() -> ModelRequest:
    return ModelRequest(model=model([]), messages=[HumanMessage(content="hi", id="h1")], system_message=SystemMessage(content="be brief"),
                        tool_choice="auto", tools=[], state={"messages": []}, model_settings={"temperature": 0})


def test_the_copy_is_what_override_makes_without_a_warning() -> None:
    request = _request()
    changes = {"messages": [HumanMessage(content="other", id="h2")], "system_message": SystemMessage(content="merged")}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ModelRequest.__setattr__ warns on every field set outside override
        copied = _override(request, **changes)
    expected = request.override(**changes)
    assert type(copied) is ModelRequest and copied is not request
    assert all(getattr(copied, f.name) is getattr(expected, f.name) for f in fields(ModelRequest))
    assert request.messages[0].id == "h1" and request.system_message.content == "be brief"  # the original as it was


def test_a_subclass_or_an_unknown_change_goes_through_override() -> None:
    class Mine(ModelRequest):
        def override(self, **overrides: object) -> ModelRequest:
            made = super().override(**overrides)
            made.model_settings["seen"] = True
            return made

    request = _request()
    mine = Mine(model=request.model, messages=request.messages, system_message=request.system_message, state={"messages": []})
    assert _override(mine, messages=[]).model_settings["seen"] is True
    assert _override(request, system_prompt="plain").system_message.content == "plain"  # override's own conversion


def test_a_field_the_instance_does_not_hold_goes_through_override(monkeypatch) -> None:
    """A newer langchain may add a field whose default stays on the class (its ``__init__`` sets it
    only when given): the copy must not fail every model call where ``override`` reads the default."""
    request = _request()
    monkeypatch.setattr(ModelRequest, "model_settings", {"from": "class"}, raising=False)
    del request.__dict__["model_settings"]  # as a field left at its class default
    copied = _override(request, messages=[])
    assert copied.messages == [] and copied.model_settings == {"from": "class"} and copied.system_message.content == "be brief"
