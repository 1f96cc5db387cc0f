"""``python -m session_graph``: the offline demo, or ``sessions ...`` (see ``cli``)."""

from session_graph.cli import main

raise SystemExit(main())
