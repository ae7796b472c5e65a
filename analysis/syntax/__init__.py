"""Stage syntax: receives a file's text and produces its tree: ``ast`` parsed one thread at
a time (:mod:`.parsing`), re-parsed after an edit only where the edit landed
(:mod:`.reparse`), byte columns turned into code-point columns in one place
(:mod:`.positions`), imports turned into qualified names (:mod:`.names`) and the
suppression comments the text carries (:mod:`.suppressions`). It imports nothing of the
analysis but the :class:`~torchward.analysis.finding.Span` vocabulary.
"""
