"""docs/rules/ is generated from the rule modules and must not drift from them."""

from __future__ import annotations

from pathlib import Path

from torchward.analysis import all_rules

from torchward import docs

REPOSITORY = Path(__file__).resolve().parents[2]


def test_docs_rules_match_the_rule_modules():
    problems = docs.drift(str(REPOSITORY / "docs" / "rules"), docs.render(all_rules()))
    assert problems == [], "run `python -m torchward.docs`:\n" + "\n".join(problems)


def test_check_mode_exits_one_on_drift_and_zero_after_regenerating(tmp_path, capsys):
    out = str(tmp_path / "rules")
    assert docs.main(["--check", "--out", out]) == 1
    assert docs.main(["--out", out]) == 0
    assert docs.main(["--check", "--out", out]) == 0
    (tmp_path / "rules" / "README.md").write_text("edited by hand\n")
    assert docs.main(["--check", "--out", out]) == 1
    assert "README.md: out of date" in capsys.readouterr().err


def test_a_page_of_a_removed_rule_is_drift_and_is_removed(tmp_path):
    out = tmp_path / "rules"
    docs.main(["--out", str(out)])
    (out / "TW999.md").write_text("# TW999 gone\n")
    assert any(
        "TW999.md: no rule has this code" in p
        for p in docs.drift(str(out), docs.render(all_rules()))
    )
    docs.main(["--out", str(out)])
    assert not (out / "TW999.md").exists()


def test_every_rule_page_is_the_text_that_explain_prints(torchward):
    pages = docs.render(all_rules())
    for rule in all_rules():
        page = pages[f"{rule.code}.md"]
        assert page.endswith(torchward("explain", rule.code).out)


def test_the_index_lists_every_rule():
    index = docs.render(all_rules())[docs.INDEX]
    for rule in all_rules():
        assert f"[{rule.code}]({rule.code}.md)" in index and rule.summary in index
