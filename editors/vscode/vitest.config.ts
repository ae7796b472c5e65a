import * as path from 'node:path';

import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The `vscode` module exists only inside VS Code; unit tests get test/vscode-mock.ts.
    alias: { vscode: path.resolve(__dirname, 'test/vscode-mock.ts') },
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
