import type { Command, CommandIO } from './command.js';
import { UsageError } from './command.js';

/**
 * Commands load lazily: `edl recordio cat` must not pay for TensorFlow.js or gRPC start-up, so the
 * one-line summaries for `edl --help` live here rather than in the command modules.
 */
const commands: Record<
  string,
  { readonly summary: string; readonly load: () => Promise<{ command: Command }> }
> = {
  recordio: {
    summary: 'inspect, print and write RecordIO files',
    load: () => import('./commands/recordio.js'),
  },
  master: {
    summary: "run a job's master with local workers; scale or inspect a running job",
    load: () => import('./commands/master.js'),
  },
  train: {
    summary: 'train a model with local workers (and evaluate it with --validation-data)',
    load: () => import('./commands/train.js'),
  },
  evaluate: {
    summary: 'evaluate a trained model on validation data',
    load: () => import('./commands/evaluate.js'),
  },
  predict: {
    summary: 'run a trained model over data and write its outputs to a file',
    load: () => import('./commands/predict.js'),
  },
  export: {
    summary: 'write a trained model as TensorFlow.js model.json + weights.bin',
    load: () => import('./commands/export.js'),
  },
  demo: {
    summary: 'train a CNN on real MNIST digits with 2 local workers, report accuracy and timings',
    load: () => import('./commands/demo.js'),
  },
  worker: {
    summary: 'run one worker process (started by train, evaluate and predict)',
    load: () => import('./commands/worker.js'),
  },
  k8s: {
    summary: 'run a job on Kubernetes: submit, manifest, status, logs, delete',
    load: () => import('./commands/k8s.js'),
  },
};

function topUsage(): string {
  return [
    'Usage: edl <command> [options]',
    '',
    'Commands:',
    ...Object.entries(commands).map(([name, { summary }]) => `  ${name.padEnd(10)}${summary}`),
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
  const entry = commands[name];
  if (entry === undefined) {
    io.stderr.write(`edl: unknown command '${name}'\n${topUsage()}\n`);
    return 2;
  }
  const { command } = await entry.load();
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
