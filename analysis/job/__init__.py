"""Stage job: receives the facts of a script (and of the project files it imports) and
produces the job it runs: the estimator's ``RunConfig``, each field with the file and
line it came from (:mod:`.runconfig`), the launch answered on demand
(:mod:`.launch_demand`) and the parameter counts and layer sequence of the models the
script defines (:mod:`.modulecount`, :mod:`.moduletrace`).
"""
