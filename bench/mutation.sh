#!/usr/bin/env bash
# Mutation run over the rule modules with cosmic-ray (docs/mutation-report.md).
#
#   bash bench/mutation.sh                      # every module of analysis/rules, sampled
#   bash bench/mutation.sh compile_in_loop ...  # only these modules
#   SAMPLE=0 bash bench/mutation.sh compile_in_loop   # every mutant of one module
#
# A full run of the 26 rule modules takes hours on two shared cores, so by default each
# module's mutants are *sampled*: cosmic-ray lists every mutant, then SAMPLE of them
# (default 15) are drawn with a fixed SEED (default 28) from the list sorted by operator,
# occurrence and position, and the rest are marked skipped. The same commit, SAMPLE and
# SEED draw the same mutants. SAMPLE=0 runs them all.
#
# cosmic-ray rewrites the module in place for every mutant, so the run happens in a copy
# of the committed tree (git archive HEAD) with a copy of .venv re-pointed at it: tests
# run in the checkout meanwhile see the real code. Each mutant is tested by the rule's
# examples, line, severity, fix, snapshot and edge cases (the fast subset's rule tests)
# and the cases written from earlier survivors (tests/analysis/test_rule_survivors.py),
# with -k CODE, where CODE is read from the module's `code = "TW0NN"`), under the test
# session's strict mode, so an exception in a mutated rule fails the test. Needs
# cosmic-ray in .venv (python -m pip install cosmic-ray); it is not part of the test
# extra because CI does not run it.
#
# Prints one line per module (killed / sampled) and the total, and writes every
# survivor's diff to $WORK/survivors.md; the sessions stay in $WORK (default a temp dir).
set -euo pipefail

cd "$(dirname "$0")/.."
sample="${SAMPLE:-15}" seed="${SEED:-28}"
work="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/torchward-mutation.XXXXXX")}"
mkdir -p "$work/repo" "$work/sessions"
git archive HEAD | tar -x -C "$work/repo"
cp -a .venv "$work/repo/.venv"
(cd "$work/repo" && .venv/bin/python -m pip install -q -e . --no-deps --no-build-isolation)

cd "$work/repo"
if [ "$#" -eq 0 ]; then
    set -- $(ls analysis/rules/*.py | xargs -n1 basename | sed 's/\.py$//' | grep -v '^__init__$')
fi
tests="tests/analysis/test_rule_examples.py tests/analysis/test_new_rules_examples.py"
tests="$tests tests/analysis/test_rule_snapshots.py tests/analysis/test_rule_edges.py"
tests="$tests tests/analysis/test_rule_survivors.py"

for module in "$@"; do
    code="$(grep -oE '^    code = "TW[0-9]+"' "analysis/rules/$module.py" | grep -oE 'TW[0-9]+')"
    config="$work/sessions/$module.toml" session="$work/sessions/$module.sqlite"
    cat > "$config" <<EOF
[cosmic-ray]
module-path = "analysis/rules/$module.py"
timeout = 90.0
excluded-modules = []
test-command = ".venv/bin/python -m pytest -x -q -p no:cacheprovider --tb=no $tests -k $code"

[cosmic-ray.distributor]
name = "local"
EOF
    .venv/bin/cosmic-ray init "$config" "$session"
    .venv/bin/python - "$session" "$sample" "$seed" <<'EOF'
# keep SAMPLE mutants drawn with SEED; mark the others skipped (cosmic-ray then passes them by)
import random
import sys

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult

session, sample, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with use_db(session, WorkDB.Mode.open) as db:
    items = sorted(
        db.pending_work_items,
        key=lambda i: [(m.operator_name, m.occurrence, m.start_pos) for m in i.mutations],
    )
    if 0 < sample < len(items):
        kept = {i.job_id for i in random.Random(seed).sample(items, sample)}
        for item in items:
            if item.job_id not in kept:
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
EOF
    .venv/bin/cosmic-ray exec "$config" "$session"
done

.venv/bin/python - "$work" "$@" <<'EOF'
# per module: killed / run (a mutant that breaks the import, "incompetent", counts as killed)
import sys
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome

work, modules = Path(sys.argv[1]), sys.argv[2:]
total_run = total_killed = 0
survivors = []
for module in modules:
    run = killed = 0
    with use_db(str(work / "sessions" / f"{module}.sqlite"), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome is WorkerOutcome.SKIPPED:
                continue
            run += 1
            if result.test_outcome is TestOutcome.SURVIVED:
                mutation = item.mutations[0]
                survivors.append(
                    f"## {module}:{mutation.start_pos[0]} {mutation.operator_name}\n\n"
                    f"```diff\n{result.diff}\n```\n"
                )
            else:
                killed += 1
    total_run, total_killed = total_run + run, total_killed + killed
    print(f"{module}: {killed}/{run} killed ({100 * killed / max(run, 1):.1f}%)")
print(f"all: {total_killed}/{total_run} killed ({100 * total_killed / max(total_run, 1):.1f}%)")
(work / "survivors.md").write_text("\n".join(survivors))
print(f"survivors' diffs in {work / 'survivors.md'}; sessions in {work / 'sessions'}")
EOF
