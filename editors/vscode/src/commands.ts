/** Command ids and protocol names the extension uses (package.json declares the commands). */

/** Commands the extension contributes (package.json `contributes.commands`). */
export const COMMANDS = {
  pickGpu: 'torchward.pickGpu',
  showEstimateReport: 'torchward.showEstimateReport',
  fixAll: 'torchward.fixAll',
  restart: 'torchward.restart',
  showLogs: 'torchward.showLogs',
  measureActive: 'torchward.measureActive',
  planActive: 'torchward.planActive',
} as const;

/** Server-side commands (server/commands.py); vscode-languageclient registers proxies for them. */
export const SERVER_COMMANDS = {
  selectGpu: 'torchward.selectGpu',
  explain: 'torchward.explain',
  whyNoJob: 'torchward.whyNoJob',
  measure: 'torchward.measure',
  installTorch: 'torchward.installTorch',
  plan: 'torchward.plan',
} as const;

export const GPU_FIT_NOTIFICATION = 'torchward/gpuFit';
export const ESTIMATE_REQUEST = 'torchward/estimate';
export const FIX_ALL_KIND = 'source.fixAll.torchward';
export const RULE_DOCUMENTATION_REQUEST = 'torchward/ruleDocumentation';
/** The scheme of the extension's read-only Markdown documents (rule docs, estimate reports). */
export const DOCS_SCHEME = 'torchward';
