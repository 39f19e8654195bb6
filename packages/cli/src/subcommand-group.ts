import type { Command, CommandIO } from './command.js';
import { UsageError } from './command.js';

/** One sub-command: runs with the arguments after its name; resolves to the exit code. */
export type SubcommandRun = (argv: string[], io: CommandIO) => Promise<number>;

/**
 * A command made of named sub-commands (`edl recordio cat ...`): the first argument picks one, and a
 * missing or unknown name is a usage error that lists the names.
 */
export function subcommandGroup(
  name: string,
  usage: string,
  subcommands: Readonly<Record<string, SubcommandRun>>,
): Command {
  const names = Object.keys(subcommands);
  const expected =
    names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
  return {
    name,
    usage,
    async run(argv, io) {
      const [chosen, ...rest] = argv;
      if (chosen === undefined) throw new UsageError(`missing sub-command (${expected})`);
      const run = Object.hasOwn(subcommands, chosen) ? subcommands[chosen] : undefined;
      if (run === undefined) throw new UsageError(`unknown sub-command '${chosen}' (expected ${expected})`);
      return run(rest, io);
    },
  };
}
