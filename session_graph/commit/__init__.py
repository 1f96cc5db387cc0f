"""The commit graph: archive a session's new messages, summarise them, extract long-term
memories and fold them into the memory store without duplicates.

``claim -> archive -> summarize -> extract -> prefilter -> decide -> write -> link_usage -> finalize``
is a LangGraph ``StateGraph`` built in one place (``graph.py``) like the resize graph, one
module per step. Every step records its result in the archive's journal, kept in the
session's state (``archives["pending"][name]``) until ``finalize``: a commit that stops (a
model error, a crash) resumes where it stopped, replaying what was decided without asking the
model again; memory writes carry the op's reference, so a replay never applies one twice.
"""

from session_graph.commit.graph import COMMIT_NODES, build_commit_graph
from session_graph.commit.run import CommitContext, CommitState, commit_result, run_commit, run_commit_async

__all__ = ["COMMIT_NODES", "CommitContext", "CommitState", "build_commit_graph", "commit_result", "run_commit", "run_commit_async"]
