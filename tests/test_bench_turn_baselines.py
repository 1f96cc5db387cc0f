"""bench_turn's third and fourth baselines hold what their labels say: the remembering stock agent's
thread keeps every message of the seeded history and grows by each turn; the trimming one (LangChain's
documented ``before_model`` + ``trim_messages``) keeps a valid window within the session's budget."""

from __future__ import annotations

from bench_util import load_bench_turn
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage


def test_the_remembering_baseline_holds_the_whole_history_and_each_turn() -> None:
    bench = load_bench_turn()
    agent, config, tokens = bench.remembering_stock(40)
    seeded = agent.get_state(config).values["messages"]
    assert [m.id for m in seeded[:40]] == [m.id for m in bench.history(40)]  # nothing trimmed
    assert len(seeded) == 44 and tokens == bench.exact_counter()(seeded)  # + the seeding turn's 4 messages
    agent.invoke({"messages": [HumanMessage(content=bench.question(1))]}, config)
    after = agent.get_state(config).values["messages"]
    assert len(after) == 48 and isinstance(after[-1], AIMessage) and not after[-1].tool_calls


def test_the_trimming_baseline_keeps_a_valid_window_within_the_budget() -> None:
    bench = load_bench_turn()
    agent, config = bench.trimming_stock()
    for turn in range(3):
        agent.invoke({"messages": [HumanMessage(content=bench.question(turn))]}, config)
        window = agent.get_state(config).values["messages"]
        before_answer = window[:-1]  # the model's last input: the window the trim kept, then its answer
        assert bench.exact_counter()(before_answer) <= bench.BUDGET < bench.exact_counter()(bench.history(bench.SEED))
        assert isinstance(window[0], HumanMessage)  # trim_messages(start_on="human")
        calls = {c["id"] for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in window if isinstance(m, ToolMessage))  # no orphaned result
        assert window[-1].content.startswith("Answer")
