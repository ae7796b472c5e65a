/**
 * One test in a real VS Code workbench in a real browser: code-server 4.100.3 (VS Code
 * OSS 1.100.3, prepared offline by scripts/setup_workbench.sh) with the packaged .vsix
 * installed, driven headless through Debian's chromium by playwright-core. It opens a
 * training script that keeps the loss with its graph (TW001) and needs ~285 GiB on an
 * A100 80GB, and checks what a user sees: the squiggle, the Problems entry, the
 * status-bar GPU fit, the quick-fix menu (Ctrl+.) and the buffer after the fix.
 * Screenshots go to test-results/workbench/.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { EXTENSION_DIR, vsixPath } from '../packaged/vsix';

const SHOTS = path.join(EXTENSION_DIR, 'test-results', 'workbench');
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
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const entry = execFileSync('bash', [path.join(EXTENSION_DIR, 'scripts', 'setup_workbench.sh')], { stdio: ['ignore', 'pipe', 'inherit'] })
    .toString()
    .trim();
  home = mkdtempSync(path.join(os.tmpdir(), 'torchward-workbench-'));
  const dirs = ['--user-data-dir', path.join(home, 'data'), '--extensions-dir', path.join(home, 'extensions')];
  execFileSync('node', [entry, ...dirs, '--install-extension', vsixPath()], { stdio: 'inherit' });

  const workspace = path.join(home, 'workspace');
  mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
  copyFileSync(path.join(__dirname, 'train_llama.py'), path.join(workspace, 'train_llama.py'));
  writeFileSync(
    path.join(workspace, '.vscode', 'settings.json'),
    JSON.stringify({ 'torchward.targetGpu': 'A100 80GB', 'torchward.importStrategy': 'useBundled', 'workbench.startupEditor': 'none' }),
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

describe('the extension in a real VS Code workbench', () => {
  it('shows the squiggle, the Problems entry, the GPU fit, the quick fix, and applies it', async () => {
    const file = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'train_llama.py' });
    await file.first().waitFor({ timeout: 60_000 }).catch(async (error) => {
      await shot('00-no-explorer');
      throw error;
    });
    await file.first().click();
    await page.waitForSelector('.monaco-editor .view-lines', { timeout: 30_000 });

    await page.waitForSelector('.monaco-editor .squiggly-warning', { timeout: 90_000 }).catch(async (error) => {
      await shot('00-no-squiggle');
      throw new Error(`${error}\ncode-server log:\n${log}`);
    });
    await shot('01-squiggle');

    const fit = page.locator('.part.statusbar .statusbar-item', { hasText: 'OOM' });
    await fit.first().waitFor({ timeout: 60_000 });
    expect(await fit.first().textContent()).toMatch(/✗ A100 80GB.* · OOM \d+%/);
    await shot('02-status-bar');

    await page.keyboard.press('Control+Shift+M');
    const problem = page.locator('.markers-panel .monaco-list-row', { hasText: 'TW001' });
    await problem.first().waitFor({ timeout: 30_000 });
    expect(await problem.first().textContent()).toContain('loss');
    await shot('03-problems');

    await page.locator('.monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+G');
    await page.keyboard.type('12:15');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Control+.');
    const fixItem = page.locator('.action-widget .monaco-list-row', { hasText: 'detach' });
    await fixItem.first().waitFor({ timeout: 30_000 });
    const menu = await page.locator('.action-widget').first().textContent();
    expect(menu).toContain('Suppress TW001 on this line');
    await shot('04-quick-fix-menu');

    // the preferred (safe) fix comes first and is focused: Enter applies it, as a user would
    expect((await page.locator('.action-widget .monaco-list-row.focused').first().textContent()) ?? '').toContain('detach');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('.monaco-editor .view-lines')?.textContent?.includes('history.append(loss.detach())'), null, {
      timeout: 30_000,
    });
    await page.locator('.monaco-editor .squiggly-warning').first().waitFor({ state: 'detached', timeout: 30_000 });
    await shot('05-fixed');
  }, 300_000);
});
