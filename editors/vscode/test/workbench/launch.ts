/**
 * A real VS Code workbench for one test file: code-server (prepared offline by
 * scripts/setup_workbench.sh) with the packaged .vsix installed, a fresh user profile and
 * workspace in a temporary home, opened headless in Debian's chromium by playwright-core.
 * The workbench tests differ only in the workspace they open; this is the one place that
 * knows how to start and stop the rest.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { type Browser, chromium, type Page } from 'playwright-core';

import { EXTENSION_DIR, vsixPath } from '../packaged/vsix';

export interface WorkbenchOptions {
  /** Prefix of the temporary home (``torchward-<name>-``). */
  name: string;
  /** The workspace's ``.vscode/settings.json``. */
  settings: Record<string, unknown>;
  /** Writes the workspace's files into ``workspace``. */
  populate: (workspace: string) => void;
  viewport?: { width: number; height: number };
  /** Workspace Trust on (a fresh profile then asks whether to trust the folder); default off. */
  trust?: boolean;
}

export interface Workbench {
  page: Page;
  /** What code-server printed so far (for failure messages). */
  log: () => string;
  close: () => Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function launchWorkbench(options: WorkbenchOptions): Promise<Workbench> {
  const entry = execFileSync('bash', [path.join(EXTENSION_DIR, 'scripts', 'setup_workbench.sh')], { stdio: ['ignore', 'pipe', 'inherit'] })
    .toString()
    .trim();
  const home = mkdtempSync(path.join(os.tmpdir(), `torchward-${options.name}-`));
  const dirs = ['--user-data-dir', path.join(home, 'data'), '--extensions-dir', path.join(home, 'extensions')];
  execFileSync('node', [entry, ...dirs, '--install-extension', vsixPath()], { stdio: 'inherit' });

  const workspace = path.join(home, 'workspace');
  mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
  options.populate(workspace);
  writeFileSync(path.join(workspace, '.vscode', 'settings.json'), JSON.stringify(options.settings));
  mkdirSync(path.join(home, 'data', 'User'), { recursive: true });
  writeFileSync(
    path.join(home, 'data', 'User', 'settings.json'),
    JSON.stringify({ 'security.workspace.trust.enabled': options.trust ?? false, 'workbench.tips.enabled': false, 'telemetry.telemetryLevel': 'off' }),
  );

  let log = '';
  const port = await freePort();
  const codeServer: ChildProcess = spawn('node', [entry, ...dirs, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', workspace], {
    env: { ...process.env, HOME: home },
  });
  codeServer.stdout!.on('data', (data) => (log += data));
  codeServer.stderr!.on('data', (data) => (log += data));
  for (let attempt = 0; attempt < 100 && !log.includes('HTTP server listening'); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const browser: Browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: options.viewport ?? { width: 1400, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.waitForSelector('.monaco-workbench .part.statusbar', { timeout: 60_000 });
  return {
    page,
    log: () => log,
    close: async () => {
      await browser.close();
      codeServer.kill();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
