#!/usr/bin/env bash
# Prepare a real VS Code workbench for test/workbench/: code-server 4.100.3 (VS Code OSS
# 1.100.3; newer releases need Node 22) from npm, and Debian's chromium and ripgrep.
# Works offline from the registries: code-server's postinstall would download ripgrep
# and native-module prebuilds, so dependencies are installed with --ignore-scripts and
# the native modules rebuilt from source against the local Node headers; Debian's rg is
# linked where @vscode/ripgrep expects its binary. The result is cached outside the
# checkout, in $TORCHWARD_WORKBENCH_CACHE (default ~/.cache/torchward/code-server-4.100.3),
# so fresh clones (CI) reuse it; a marker file says it is complete. Prints the entry point.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=4.100.3
ROOT="${TORCHWARD_WORKBENCH_CACHE:-$HOME/.cache/torchward/code-server-$VERSION}"
MARKER="$ROOT/.complete"
BIN="$ROOT/node_modules/code-server/out/node/entry.js"

if ! command -v chromium >/dev/null || ! command -v rg >/dev/null; then
  echo "setup_workbench: installing chromium and ripgrep from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq chromium ripgrep >&2
fi

if [ -f "$MARKER" ]; then
  echo "$BIN"
  exit 0
fi

rm -rf "$ROOT"
mkdir -p "$ROOT"
node_prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
export npm_config_nodedir="$node_prefix"  # node-gyp: local headers, no download
export npm_config_yes=true                # node-pty's post-install runs `npx node-gyp`
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
{
  cd "$ROOT"
  echo '{"name": "torchward-workbench", "private": true}' > package.json
  npm install --ignore-scripts "code-server@$VERSION"
  npm rebuild argon2
  cd node_modules/code-server/lib/vscode
  npm install --omit=dev --ignore-scripts
  npm rebuild node-pty @vscode/spdlog native-watchdog || true  # node-pty's compile_commands step may fail after the build
  for module in node-pty/build/Release/pty.node @vscode/spdlog/build/Release/spdlog.node native-watchdog/build/Release/watchdog.node; do
    test -f "node_modules/$module" || { echo "setup_workbench: $module was not built" >&2; exit 1; }
  done
  mkdir -p node_modules/@vscode/ripgrep/bin
  ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
  ln -sfn node_modules node_modules.asar  # what code-server's postinstall does
  (cd bin/remote-cli && ln -sf code-linux.sh code-server)
  (cd bin/helpers && ln -sf browser-linux.sh browser.sh)
  (cd extensions && npm install --omit=dev --ignore-scripts)
} >&2
node "$BIN" --version >&2
touch "$MARKER"
echo "$BIN"
