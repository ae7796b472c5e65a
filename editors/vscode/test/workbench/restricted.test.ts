/**
 * Restricted Mode in a real VS Code workbench: Workspace Trust on, the folder not
 * trusted. The extension still runs (the manifest declares `untrustedWorkspaces:
 * limited`): the status bar shows the GPU fit and the peak lens is there, but the
 * "Measure with your model (runs your code)" lens is not. Screenshots go to
 * test-results/workbench/restricted-*.png.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { EXTENSION_DIR } from '../packaged/vsix';
import { launchWorkbench, type Workbench } from './launch';

const SHOTS = path.join(EXTENSION_DIR, 'test-results', 'workbench');
let workbench: Workbench;
let page: Page;

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `restricted-${name}.png`) });
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  workbench = await launchWorkbench({
    name: 'restricted',
    trust: true,
    viewport: { width: 1400, height: 1300 }, // the Restricted Mode banner takes a line: keep the model's line in view
    settings: { 'torchward.targetGpu': 'A100 80GB', 'torchward.importStrategy': 'useBundled', 'workbench.startupEditor': 'none' },
    populate: (workspace) => {
      copyFileSync(path.join(__dirname, 'train_local.py'), path.join(workspace, 'train_local.py'));
      writeFileSync(path.join(workspace, 'pyproject.toml'), '');
    },
  });
  page = workbench.page;
}, 600_000);

afterAll(async () => {
  await workbench?.close();
});

describe('an untrusted folder (Restricted Mode)', () => {
  it('keeps lint and estimate, and hides Measure', async () => {
    // a fresh profile asks whether to trust the folder: the user says no
    const no = page.locator('.monaco-dialog-box .dialog-buttons a.monaco-button', { hasText: "No, I don't trust the authors" });
    await no.first().waitFor({ timeout: 60_000 }).catch(async (error) => {
      await shot('00-no-trust-dialog');
      throw error;
    });
    await no.first().click();
    await page.locator('.part.statusbar .statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: 30_000 });

    const file = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'train_local.py' });
    await file.first().waitFor({ timeout: 60_000 });
    await file.first().click();
    await page.waitForSelector('.monaco-editor .view-lines', { timeout: 30_000 });

    const peak = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Peak ≈' });
    await peak.first().waitFor({ timeout: 120_000 }).catch(async (error) => {
      await shot('01-no-lens');
      throw new Error(`${error}\ncode-server log:\n${workbench.log()}`);
    });
    const fit = page.locator('.part.statusbar .statusbar-item', { hasText: 'A100 80GB' });
    await fit.first().waitFor({ timeout: 60_000 });
    expect(await page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Measure' }).count()).toBe(0);
    await shot('01-lint-and-estimate');
  }, 300_000);
});
