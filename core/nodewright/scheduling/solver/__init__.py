"""The provisioning solver, one concept per module along Karpenter's scheduling package.

:mod:`.scheduler` runs the queue and is the entry point (:func:`.scheduler.solve`);
:mod:`.existingnode` and :mod:`.nodeclaim` are the two kinds of candidate a pod may land on,
:mod:`.nodeclaimtemplate` the NodePool a new NodeClaim comes from, :mod:`.instancetypes` the
instance types a claim keeps, :mod:`.preferences` what a pod gives up when it fits nowhere,
:mod:`.reservations` reserved capacity, :mod:`.minvalues` minValues, and :mod:`.constraints`
the checks every candidate makes.
"""
