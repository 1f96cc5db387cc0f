"""Talking to chat models: a model named as users name it, and its reply read into what a prompt wants.

``names`` turns what ``init_chat_model`` accepts (``"openai:gpt-4o-mini"``) into a chat model
wherever the library takes one (memo, summary, commit), with a clear error naming the extra when
``langchain`` is missing.
``replies`` turns a model's reply into the structure each prompt asks for (fences with any tag,
``<think>`` blocks, prose around one JSON object, lenient JSON where it is unambiguous, the wrapped
and the bare memo dict, the model's structured output where it has one) or refuses it with a
reason. Every model-facing caller (the memo and summary updaters, the commit's summarise, extract
and decide steps) reads replies here.
``quote`` shows untrusted text (an id, a stored memory, a message) to a model as one JSON line that
cannot end the field it sits in. May import ``_base`` and ``errors`` only.
"""
