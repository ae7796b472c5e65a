#!/usr/bin/env bash
# The VS Code extension's CI (called by .ci/run): dependencies from package-lock.json,
# the .vsix with the bundled server (npm run package), then the unit tests, the .vsix /
# manifest / settings-schema tests and the end-to-end test of the packaged server, and
# the real-workbench test (code-server + chromium, prepared by setup_workbench.sh;
# screenshots in editors/vscode/test-results/workbench/).
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
npm run package
npm test
npm run test:workbench
