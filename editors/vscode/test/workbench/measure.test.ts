/**
 * "Measure with your model (runs your code)" in a real VS Code workbench (code-server +
 * chromium, as workbench.test.ts): a script that trains its own model class, the
 * server's code lens clicked, the status bar switching from the estimate to the
 * measurement (`· measured`). The measurement runs torch in a subprocess of the
 * interpreter that runs the server, so the workspace's `torchward.interpreter` is a
 * Python with torch: $TORCHWARD_TORCH_PYTHON (the CI venv, .ci/run), else `python3` when
 * it has torch; without one the test is skipped, saying why. Screenshots go to
 * test-results/workbench/measure-*.png.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { EXTENSION_DIR, vsixPath } from '../packaged/vsix';

const SHOTS = path.join(EXTENSION_DIR, 'test-results', 'workbench');

function torchPython(): string | undefined {
  for (const python of [process.env.TORCHWARD_TORCH_PYTHON, 'python3']) {
    if (python && spawnSync(python, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0) {
      return python;
    }
  }
  return undefined;
}

const PYTHON = torchPython();
let codeServer: ChildProcess;
let browser: Browser;
let page: Page;
let home: string;
let log = '';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `measure-${name}.png`) });
}

describe.skipIf(!PYTHON)('measured numbers in a real VS Code workbench (needs a Python with torch: $TORCHWARD_TORCH_PYTHON)', () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const entry = execFileSync('bash', [path.join(EXTENSION_DIR, 'scripts', 'setup_workbench.sh')], { stdio: ['ignore', 'pipe', 'inherit'] })
      .toString()
      .trim();
    home = mkdtempSync(path.join(os.tmpdir(), 'torchward-measure-'));
    const dirs = ['--user-data-dir', path.join(home, 'data'), '--extensions-dir', path.join(home, 'extensions')];
    execFileSync('node', [entry, ...dirs, '--install-extension', vsixPath()], { stdio: 'inherit' });
    const workspace = path.join(home, 'workspace');
    mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
    copyFileSync(path.join(__dirname, 'train_local.py'), path.join(workspace, 'train_local.py'));
    writeFileSync(path.join(workspace, 'pyproject.toml'), '');
    writeFileSync(
      path.join(workspace, '.vscode', 'settings.json'),
      JSON.stringify({
        'torchward.targetGpu': 'A100 80GB',
        'torchward.importStrategy': 'useBundled',
        'torchward.interpreter': [PYTHON],
        'workbench.startupEditor': 'none',
      }),
    );
    mkdirSync(path.join(home, 'data', 'User'), { recursive: true });
    writeFileSync(
      path.join(home, 'data', 'User', 'settings.json'),
      JSON.stringify({ 'security.workspace.trust.enabled': false, 'workbench.tips.enabled': false, 'telemetry.telemetryLevel': 'off' }),
    );
    const port = await freePort();
    codeServer = spawn('node', [entry, ...dirs, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', workspace], {
      env: { ...process.env, HOME: home },
    });
    codeServer.stdout!.on('data', (data) => (log += data));
    codeServer.stderr!.on('data', (data) => (log += data));
    for (let attempt = 0; attempt < 100 && !log.includes('HTTP server listening'); attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench .part.statusbar', { timeout: 60_000 });
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    codeServer?.kill();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('runs the lens on a script with a local model class and the status bar switches to measured', async () => {
    const file = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'train_local.py' });
    await file.first().waitFor({ timeout: 60_000 });
    await file.first().click();
    await page.waitForSelector('.monaco-editor .view-lines', { timeout: 30_000 });

    const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Measure with your model' });
    await lens.first().waitFor({ timeout: 120_000 }).catch(async (error) => {
      await shot('00-no-lens');
      throw new Error(`${error}\ncode-server log:\n${log}`);
    });
    const statusBefore = page.locator('.part.statusbar .statusbar-item', { hasText: 'A100 80GB' });
    await statusBefore.first().waitFor({ timeout: 60_000 });
    expect(await statusBefore.first().textContent()).not.toContain('measured');
    await shot('01-estimated');

    await lens.first().click();
    const measured = page.locator('.part.statusbar .statusbar-item', { hasText: 'measured' });
    await measured.first().waitFor({ timeout: 240_000 }).catch(async (error) => {
      await shot('02-not-measured');
      throw new Error(`${error}\ncode-server log:\n${log}`);
    });
    expect(await measured.first().textContent()).toMatch(/A100 80GB.* · measured/);
    await page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Measured' }).first().waitFor({ timeout: 30_000 });
    await shot('02-measured');
  }, 420_000);
});
