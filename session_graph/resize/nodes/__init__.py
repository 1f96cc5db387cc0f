"""The resize graph's nodes: each a function ``(state, runtime) -> partial update``."""

from session_graph.resize.nodes.attachment_summary import attachment_summary
from session_graph.resize.nodes.deep_chunk import deep_chunk
from session_graph.resize.nodes.judge import judge
from session_graph.resize.nodes.lite_prune import lite_prune
from session_graph.resize.nodes.memo_update import memo_update
from session_graph.resize.nodes.summary_fold import summary_fold

__all__ = ["attachment_summary", "deep_chunk", "judge", "lite_prune", "memo_update", "summary_fold"]
