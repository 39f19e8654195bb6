export type { Command, CommandIO } from './command.js';
export { UsageError } from './command.js';
export { runCli } from './main.js';
