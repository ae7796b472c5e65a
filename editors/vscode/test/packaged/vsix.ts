/**
 * The packaged extension for the tests in this folder: `torchward.vsix` (or
 * $TORCHWARD_VSIX), built by `npm run package`, unpacked once into .cache/ (python3's
 * zipfile: no unzip program needed). Its `extension/` folder is what VS Code installs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';

export const EXTENSION_DIR = path.resolve(__dirname, '..', '..');
export const REPOSITORY = path.resolve(EXTENSION_DIR, '..', '..');

export function vsixPath(): string {
  const vsix = process.env.TORCHWARD_VSIX ?? path.join(EXTENSION_DIR, 'torchward.vsix');
  if (!existsSync(vsix)) {
    throw new Error(`${vsix} does not exist: run \`npm run package\` first (or set TORCHWARD_VSIX)`);
  }
  return vsix;
}

export function vsixEntries(): string[] {
  const out = execFileSync('python3', ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', vsixPath()]);
  return out.toString().split('\n').filter(Boolean);
}

/** The unpacked `extension/` folder of the .vsix. */
export function unpackedExtension(): string {
  const vsix = vsixPath();
  const cache = path.join(EXTENSION_DIR, '.cache');
  const target = path.join(cache, `vsix-${Math.round(statSync(vsix).mtimeMs)}`);
  if (!existsSync(target)) {
    execFileSync('mkdir', ['-p', cache]);
    const temporary = mkdtempSync(path.join(cache, 'unpack-'));
    execFileSync('python3', ['-m', 'zipfile', '-e', vsix, temporary]);
    try {
      renameSync(temporary, target);
    } catch {
      rmSync(temporary, { recursive: true, force: true }); // another worker got there first
    }
  }
  return path.join(target, 'extension');
}
