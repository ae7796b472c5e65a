"""Placeholder while the semantic model is written."""
import attrs

@attrs.define
class FileFacts:
    path: str

def build_facts(tree, source, path):
    return FileFacts(path)
