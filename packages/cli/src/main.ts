import { readFileSync } from 'node:fs';
import type { Command, CommandIO } from './command.js';
import { UsageError } from './command.js';

/**
 * Commands load lazily: `edl recordio cat` must not pay for TensorFlow.js or gRPC start-up, so the
 * one-line summaries for `edl --help` live here rather than in the command modules.
 */
const commands: Record<
  string,
  {
    readonly summary: string;
    readonly load: () => Promise<{ command: Command }>;
    /** Optional peer dependencies the command needs, with the version range to install. */
    readonly needs?: Readonly<Record<string, string>>;
  }
> = {
  recordio: {
    summary: 'inspect, print and write RecordIO files',
    load: () => import('./commands/recordio.js'),
  },
  tfrecord: {
    summary: 'inspect and print TensorFlow TFRecord files (and their tf.train.Examples)',
    load: () => import('./commands/tfrecord.js'),
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
  ps: {
    summary: "run one parameter-server shard of a job's embedding tables",
    load: () => import('./commands/ps.js'),
  },
  worker: {
    summary: 'run one worker process (started by train, evaluate and predict)',
    load: () => import('./commands/worker.js'),
  },
  k8s: {
    summary: 'run a job on Kubernetes: submit, manifest, status, logs, delete',
    load: () => import('./commands/k8s.js'),
    needs: { '@kubernetes/client-node': '~1.4.0' },
  },
};

function topUsage(): string {
  return [
    'Usage: edl <command> [options]',
    '',
    'Commands:',
    ...Object.entries(commands).map(([name, { summary }]) => `  ${name.padEnd(10)}${summary}`),
    '',
    "Run 'edl <command> --help' for a command's options, 'edl --version' for the version.",
  ].join('\n');
}

/** The version of this package (and of the `edl` command). */
export function cliVersion(): string {
  // package.json sits one level above both src/ (tests) and dist/ (the installed command).
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** A message on one line: the dispatcher promises one line, then the usage. */
function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/** The package of `needs` whose absence made a command module fail to load, if that is why. */
function missingPackage(error: unknown, needs: Readonly<Record<string, string>>): string | undefined {
  if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  const message = (error as Error).message;
  return Object.keys(needs).find((name) => message.includes(`'${name}'`));
}

/** Runs the `edl` command line and resolves to the exit code. */
export async function runCli(argv: string[], io: CommandIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${topUsage()}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version') {
    io.stdout.write(`edl ${cliVersion()}\n`);
    return 0;
  }
  const entry = commands[name];
  if (entry === undefined) {
    io.stderr.write(`edl: unknown command '${name}'\n${topUsage()}\n`);
    return 2;
  }
  // An optional package missing when the command module or its heavy libraries load: say how to add it.
  const reportMissing = (error: unknown): boolean => {
    const missing = missingPackage(error, entry.needs ?? {});
    if (missing === undefined) return false;
    io.stderr.write(
      `edl ${name}: needs ${missing}, an optional dependency of @edl/cli that is not installed. ` +
        `Install it next to @edl/cli: npm install ${missing}@${entry.needs?.[missing]}\n`,
    );
    return true;
  };
  let command: Command;
  try {
    ({ command } = await entry.load());
  } catch (error) {
    if (reportMissing(error)) return 1;
    throw error;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`edl ${name}: ${oneLine(error.message)}\n${command.usage}\n`);
      return 2;
    }
    if (reportMissing(error)) return 1;
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`edl ${name}: ${oneLine(message)}\n`);
    if (process.env.EDL_DEBUG === '1' && error instanceof Error && error.stack)
      io.stderr.write(`${error.stack}\n`);
    return 1;
  }
}
