"""State the controllers share: the cluster as one pass sees it, its translation into the solver's
plain data, NodePools' registration health and cost, and the nodes nominated for pending pods.
"""
