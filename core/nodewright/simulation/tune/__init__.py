"""``nodewright tune``: the search for the NodePool settings that serve a cluster best. The
space (:mod:`.space`) names the fields to vary; each variant is one simulation (:mod:`.worker`)
run here or in worker processes (:mod:`.local`) or on a Ray cluster (:mod:`.distributed`); the
results are ranked (:mod:`.ranking`) and shown (:mod:`.text`)."""
