"""``nodewright run``: the operator as a long-running service against a real API server."""
