"""``source_tree`` gives every text its own tree, however the texts are interleaved.

The fixes of one file ask for its tree once per finding with the same text object, which
is recognised without hashing the text again; equal texts in other objects still share
one tree (the content cache), and a different text never gets another's tree.
"""

from __future__ import annotations

from torchward.analysis.fixes.tree import source_tree


def test_each_text_gets_its_own_tree_in_any_order():
    first = "x = 1\n" * 3
    second = "y = 2\n" * 3
    copy = "".join(["x = 1\n"] * 3)  # equal to ``first``, another object
    assert copy == first and copy is not first
    tree = source_tree(first)
    assert source_tree(first) is tree
    assert source_tree(second).source == second
    assert source_tree(first) is tree  # not the tree of the text asked for last
    assert source_tree(copy) is tree
    assert source_tree(second).module.code == second


def test_the_parent_map_is_the_one_libcsts_provider_resolves():
    """On every fixer fixture and on this package's own modules (decorators, f-strings,
    match statements, comprehensions, type annotations, comments, CRLF files)."""
    import pathlib

    import libcst as cst
    from libcst.metadata import MetadataWrapper, ParentNodeProvider
    from torchward.analysis.fixes.tree import parents_of

    root = pathlib.Path(__file__).resolve().parents[2]
    paths = sorted((root / "tests" / "fixes" / "fixtures").rglob("*.py"))
    paths += sorted((root / "analysis" / "fixes").glob("*.py"))
    paths += sorted((root / "server").glob("*.py"))
    compared = 0
    for path in paths:
        try:
            module = cst.parse_module(path.read_bytes())
        except cst.ParserSyntaxError:
            continue
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        expected = wrapper.resolve(ParentNodeProvider)
        found = parents_of(wrapper.module)
        assert found.keys() == expected.keys(), path
        assert all(found[node] is parent for node, parent in expected.items()), path
        compared += 1
    assert compared >= 40
