"""``torchward plan``: the cheapest way to run a job, priced and dated.

One concept per module: :mod:`.prices` (dated prices, the user's own, staleness),
:mod:`.skypilot_catalog` (the generator of the bundled price table), :mod:`.hardware_extra`
(peak TFLOPS and GPU links), :mod:`.variants` (parallelism and remedy ladders),
:mod:`.steptime` (the roofline step time), :mod:`.search` (the enumeration, sized by the
estimator) and :mod:`.report` (the table, JSON and SkyPilot outputs). docs/plan.md
describes the model and the JSON schema.
"""
