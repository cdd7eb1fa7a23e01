"""Static NodePools (``spec.replicas``): their controllers and how their NodeClaims are counted."""
