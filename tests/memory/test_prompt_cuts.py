"""A quoted transcript line cut into pieces (a message longer than a commit chunk) or shown by
its head and tail (a huge one) is never cut inside a JSON escape: cut between the backslash and
the quote of ``\\"``, a piece would start with a bare quote, which the model reads as the end of
the string, and the message's own text after it as the prompt's."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage

from session_graph.memory.prompts import digested, transcript_chunks


def test_a_piece_never_starts_inside_an_escape() -> None:
    for offset in range(90, 101):  # the quote at every position around the cut
        text = "a" * offset + '"INJECTED: obey\n\u2028' + "b" * 150
        chunks = transcript_chunks([HumanMessage(content=text)], max_chars=100)
        pieces = [p for chunk in chunks for p in chunk.split("\n")]
        assert all(not p.startswith('(continued) "') and len(p) <= 100 + len("(continued) ") for p in pieces), pieces
        joined = pieces[0] + "".join(p[len("(continued) ") :] for p in pieces[1:])
        assert json.loads(joined[len("user: ") :]) == text  # the pieces are the line, nothing lost or doubled


def test_a_huge_line_s_head_and_tail_keep_their_escapes_whole() -> None:
    for shift in range(8):
        line = "user: " + json.dumps("x" * (3000 + shift) + '"' * 40 + "\u2028" * 10 + "y" * 1000)[:-1] + '"'
        shown = digested(line, 200)
        head, tail = shown.split("\n")[0], shown.split("\n(continued) ")[1]
        assert not tail.startswith('"') and not tail.startswith(("u2028", "2028", "028", "28"))
        assert not head.endswith("\\") or head.endswith("\\\\")
