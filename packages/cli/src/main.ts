import type { Command, CommandIO } from './command.js';
import { UsageError } from './command.js';

/** Commands load lazily: `edl recordio cat` must not pay for TensorFlow.js start-up. */
const commandLoaders: Record<string, () => Promise<{ command: Command }>> = {
  recordio: () => import('./commands/recordio.js'),
  master: () => import('./commands/master.js'),
  train: () => import('./commands/train.js'),
  evaluate: () => import('./commands/evaluate.js'),
  predict: () => import('./commands/predict.js'),
  demo: () => import('./commands/demo.js'),
  worker: () => import('./commands/worker.js'),
  k8s: () => import('./commands/k8s.js'),
};

function topUsage(): string {
  return [
    'Usage: edl <command> [options]',
    '',
    'Commands:',
    ...Object.keys(commandLoaders).map((name) => `  ${name}`),
    '',
    "Run 'edl <command> --help' for a command's options.",
  ].join('\n');
}

/** Runs the `edl` command line and resolves to the exit code. */
export async function runCli(argv: string[], io: CommandIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${topUsage()}\n`);
    return name === undefined ? 2 : 0;
  }
  const load = commandLoaders[name];
  if (load === undefined) {
    io.stderr.write(`edl: unknown command '${name}'\n${topUsage()}\n`);
    return 2;
  }
  const { command } = await load();
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`edl ${name}: ${error.message}\n${command.usage}\n`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`edl ${name}: ${message}\n`);
    if (process.env.EDL_DEBUG === '1' && error instanceof Error && error.stack)
      io.stderr.write(`${error.stack}\n`);
    return 1;
  }
}
