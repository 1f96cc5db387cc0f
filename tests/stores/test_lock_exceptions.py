"""The held-files lock block (``HeldFiles.locked``, a class since s28) lets go of both the
in-process mutex and the cross-process ``flock`` whatever ends it: an exception or a
``KeyboardInterrupt`` inside the block, or one raised while the lock is being taken after the
``flock`` was got (the check that the held lock file is still the one at the path: a
``KeyboardInterrupt`` delivered during its ``stat``, a ``PermissionError``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lock_util import held_by_others
import pytest

from session_graph.stores import jsonl_handles

pytestmark = pytest.mark.skipif(os.name == "nt", reason="flock")


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt, SystemExit])
def test_an_exception_inside_the_block_releases_the_lock(tmp_path: Path, error: type[BaseException]) -> None:
    files = jsonl_handles.HeldFiles()
    path = tmp_path / "k.lock"
    with pytest.raises(error), files.locked(path, "k", tmp_path):
        assert held_by_others(path)
        raise error()
    assert not held_by_others(path) and not files._entries[path].mutex.locked()
    with files.locked(path, "k", tmp_path):  # and it is taken again
        pass
    files.close()


@pytest.mark.parametrize("error", [KeyboardInterrupt, PermissionError])
def test_an_exception_after_the_flock_while_taking_it_releases_the_flock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]) -> None:
    files = jsonl_handles.HeldFiles()
    path = tmp_path / "k.lock"
    real_stat = os.stat

    def stat(target: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(target) == path:
            raise error()
        return real_stat(target, *args, **kwargs)

    monkeypatch.setattr(jsonl_handles.os, "stat", stat)
    with pytest.raises(error), files.locked(path, "k", tmp_path):
        pytest.fail("the block does not run when the lock is not taken")
    monkeypatch.undo()
    assert not files._entries[path].mutex.locked()
    assert not held_by_others(path)  # else every other process waits on this session until this one exits
    files.close()
