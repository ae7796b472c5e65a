#!/usr/bin/env bash
# Mutation run over rule modules with cosmic-ray (docs/mutation-report.md).
#
#   bash bench/mutation.sh compile_in_loop:TW016 softmax_before_cross_entropy:TW005 ...
#
# Each argument is a module of analysis/rules and its rule code. cosmic-ray rewrites the
# module in place for every mutant, so the run happens in a copy of the committed tree
# (git archive HEAD) with a copy of .venv re-pointed at it: tests run in the checkout
# meanwhile see the real code. Each mutant is tested by the rule's examples, line,
# severity, fix and snapshot (the fast subset's rule tests, -k CODE), under the test
# session's strict mode. Needs cosmic-ray in .venv (pip install cosmic-ray); it is not
# part of the test extra because CI does not run it (an hour on two cores).
# Prints cr-report's summary per module; the sessions stay in $WORK (default a temp dir).
set -euo pipefail

cd "$(dirname "$0")/.."
work="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/torchward-mutation.XXXXXX")}"
mkdir -p "$work/repo" "$work/sessions"
git archive HEAD | tar -x -C "$work/repo"
cp -a .venv "$work/repo/.venv"
(cd "$work/repo" && .venv/bin/python -m pip install -q -e . --no-deps --no-build-isolation)

cd "$work/repo"
for pair in "$@"; do
    module="${pair%%:*}" code="${pair##*:}"
    config="$work/sessions/$module.toml" session="$work/sessions/$module.sqlite"
    cat > "$config" <<EOF
[cosmic-ray]
module-path = "analysis/rules/$module.py"
timeout = 90.0
excluded-modules = []
test-command = ".venv/bin/python -m pytest -x -q -p no:cacheprovider --tb=no tests/analysis/test_rule_examples.py tests/analysis/test_new_rules_examples.py tests/analysis/test_rule_snapshots.py tests/analysis/test_rule_edges.py -k $code"

[cosmic-ray.distributor]
name = "local"
EOF
    .venv/bin/cosmic-ray init "$config" "$session"
    .venv/bin/cosmic-ray exec "$config" "$session"
    echo "== $module ($code)"
    .venv/bin/cr-report "$session" | tail -3
done
echo "sessions in $work/sessions (cr-report --show-pending FILE.sqlite lists each mutant)"
