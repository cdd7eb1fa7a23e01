"""NodePool status and registration health, and NodePools as the solver sees them."""
