"""``python -m session_graph`` runs the offline demo."""

from session_graph.demo import main

raise SystemExit(main())
