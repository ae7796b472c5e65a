/**
 * "Measure with your model (runs your code)" in a real VS Code workbench (code-server +
 * chromium, as workbench.test.ts): a script that trains its own model class, the
 * server's code lens clicked, the status bar switching from the estimate to the
 * measurement (`· measured`). The measurement runs torch in a subprocess of the
 * interpreter that runs the server, so the workspace's `torchward.interpreter` is a
 * Python with torch: $TORCHWARD_TORCH_PYTHON (the CI venv, .ci/run), else `python3` when
 * it has torch; without one the test is skipped, saying why. Screenshots go to
 * test-results/workbench/measure-*.png.
 *
 * The first click asks (a modal naming the interpreter, the script and what runs); the
 * answer is remembered for the workspace. A measurement of a model whose construction
 * takes minutes is cancelled from its lens, and its worker process is gone.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { EXTENSION_DIR } from '../packaged/vsix';
import { launchWorkbench, type Workbench } from './launch';

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
let workbench: Workbench;
let page: Page;

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `measure-${name}.png`) });
}

describe.skipIf(!PYTHON)('measured numbers in a real VS Code workbench (needs a Python with torch: $TORCHWARD_TORCH_PYTHON)', () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    workbench = await launchWorkbench({
      name: 'measure',
      viewport: { width: 1400, height: 1300 }, // train_slow.py's model line stays in view
      settings: {
        'torchward.targetGpu': 'A100 80GB',
        'torchward.importStrategy': 'useBundled',
        'torchward.interpreter': [PYTHON],
        'workbench.startupEditor': 'none',
      },
      populate: (workspace) => {
        copyFileSync(path.join(__dirname, 'train_local.py'), path.join(workspace, 'train_local.py'));
        copyFileSync(path.join(__dirname, 'train_slow.py'), path.join(workspace, 'train_slow.py'));
        writeFileSync(path.join(workspace, 'pyproject.toml'), '');
      },
    });
    page = workbench.page;
  }, 600_000);

  afterAll(async () => {
    await workbench?.close();
  });

  it('runs the lens on a script with a local model class and the status bar switches to measured', async () => {
    const file = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'train_local.py' });
    await file.first().waitFor({ timeout: 60_000 });
    await file.first().click();
    await page.waitForSelector('.monaco-editor .view-lines', { timeout: 30_000 });

    const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Measure with your model' });
    await lens.first().waitFor({ timeout: 120_000 }).catch(async (error) => {
      await shot('00-no-lens');
      throw new Error(`${error}\ncode-server log:\n${workbench.log()}`);
    });
    const statusBefore = page.locator('.part.statusbar .statusbar-item', { hasText: 'A100 80GB' });
    await statusBefore.first().waitFor({ timeout: 60_000 });
    expect(await statusBefore.first().textContent()).not.toContain('measured');
    await shot('01-estimated');

    await lens.first().click();
    // it asks first: a modal that names the interpreter and the script
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.first().waitFor({ timeout: 60_000 }).catch(async (error) => {
      await shot('01-no-consent');
      throw new Error(`${error}\ncode-server log:\n${workbench.log()}`);
    });
    const asked = (await dialog.first().textContent()) ?? '';
    expect(asked).toContain('Measure runs your code');
    expect(asked).toContain(PYTHON!);
    expect(asked).toContain('train_local.py');
    await shot('01-consent');
    await dialog.locator('.dialog-buttons a.monaco-button', { hasText: 'Run' }).first().click();
    const measured = page.locator('.part.statusbar .statusbar-item', { hasText: 'measured' });
    await measured.first().waitFor({ timeout: 240_000 }).catch(async (error) => {
      await shot('02-not-measured');
      throw new Error(`${error}\ncode-server log:\n${workbench.log()}`);
    });
    expect(await measured.first().textContent()).toMatch(/A100 80GB.* · measured/);
    await page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Measured' }).first().waitFor({ timeout: 30_000 });
    await shot('02-measured');
  }, 420_000);

  it('cancels a running measurement from its lens, killing the worker, without asking again', async () => {
    const workers = () => {
      try {
        return execFileSync('pgrep', ['-f', 'torchward.profile.worker']).toString().trim().split('\n').filter(Boolean);
      } catch {
        return [] as string[]; // pgrep exits 1 when nothing matches
      }
    };
    const before = workers();
    const file = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'train_slow.py' });
    await file.first().click();
    // the other file's editor keeps its (hidden) lenses: only the visible ones count
    const lens = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Measure with your model' }).filter({ visible: true });
    await lens.first().waitFor({ timeout: 120_000 });
    await lens.first().click();
    // consent was given for this workspace and interpreter: no dialog this time
    const cancel = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'click to cancel' }).filter({ visible: true });
    await cancel.first().waitFor({ timeout: 60_000 });
    expect(await page.locator('.monaco-dialog-box').count()).toBe(0);
    for (let attempt = 0; attempt < 100 && workers().length <= before.length; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(workers().length).toBeGreaterThan(before.length);
    await shot('03-running');
    await cancel.first().click();
    await lens.first().waitFor({ timeout: 60_000 });
    for (let attempt = 0; attempt < 100 && workers().length > before.length; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(workers()).toEqual(before);
    await shot('04-cancelled');
  }, 300_000);
});
