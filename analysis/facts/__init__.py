"""Stage facts: receives the tree and produces :class:`.filefacts.FileFacts`, what rules
read: the semantic model (functions, classes, imports), an abstract value with a kind
and evidence for every expression (:mod:`.values`), the flow-sensitive dataflow per
function and calling context (:mod:`.analyzer`, :mod:`.interpreter`, :mod:`.calls`), the
training events in order (:mod:`.events`) and the constants and path conditions of a
plain launch (:mod:`.launch`). It calls the framework adapters of
:mod:`torchward.analysis.effects` as plug-ins, which build on its values.
"""
