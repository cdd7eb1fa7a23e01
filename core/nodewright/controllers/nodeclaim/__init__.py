"""NodeClaim controllers: lifecycle, garbage collection, and the history of launches."""
