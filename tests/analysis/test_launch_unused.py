"""The top-level functions a plain launch cannot run (analysis/job/launch_unused.py)."""

from __future__ import annotations

import ast

from torchward.analysis.job.launch_unused import unused_functions

_GUARD = '\nif __name__ == "__main__":\n    main()\n'


def _unused(source: str) -> set[str]:
    return set(unused_functions(ast.parse(source), source))


def test_a_function_only_an_unused_function_calls_is_unused():
    source = (
        "def helper():\n    return 1\n"
        "def old_job():\n    helper()\n"
        "def main():\n    pass\n" + _GUARD
    )
    assert _unused(source) == {"helper", "old_job"}


def test_two_unused_functions_that_call_each_other_stay_unused():
    source = "def a():\n    b()\ndef b():\n    a()\ndef main():\n    pass\n" + _GUARD
    assert _unused(source) == {"a", "b"}


def test_what_the_launch_names_is_used():
    source = (
        "def helper():\n    return 1\n"
        "def callback():\n    return 2\n"
        "def main():\n    helper()\n    run(callback)\n" + _GUARD
    )
    assert _unused(source) == set()


def test_a_name_in_a_string_or_all_counts_a_comment_does_not():
    source = (
        "__all__ = ['exported']\n"
        "def exported():\n    pass\n"
        "def by_name():\n    pass\n"
        "# commented_out() is not a use\n"
        "def commented_out():\n    pass\n"
        "def main():\n    table = {'x': 'by_name'}\n" + _GUARD
    )
    assert _unused(source) == {"commented_out"}
    # a name computed at run time: nothing is left out
    dynamic = source.replace("table = {'x': 'by_name'}", "globals()['by_' + 'name']()")
    assert _unused(dynamic) == set()
    # a method named eval is no lookup by name
    evaluating = source.replace("table = {'x': 'by_name'}", "model.eval()")
    assert _unused(evaluating) == {"by_name", "commented_out"}


def test_decorated_functions_and_modules_without_a_main_block_are_left_alone():
    decorated = "@app.command()\ndef train():\n    pass\ndef main():\n    pass\n" + _GUARD
    assert _unused(decorated) == set()
    library = "def train():\n    pass\ndef evaluate():\n    pass\n"
    assert _unused(library) == set()


def test_a_number_is_never_a_name():
    # ``e5`` is a function's name, and a digit-led run of ``1e5``: not a use of it
    source = "def e5():\n    pass\ndef main():\n    x = 1e5\n" + _GUARD
    assert _unused(source) == {"e5"}
