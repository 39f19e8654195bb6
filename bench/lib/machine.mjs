import os from 'node:os';

/** One line naming the machine a benchmark ran on: CPU model, cores, memory, Node.js version. */
export function machineLine() {
  const cpus = os.cpus();
  const model = cpus[0]?.model?.trim() || 'unknown CPU';
  const memGiB = (os.totalmem() / 2 ** 30).toFixed(0);
  return `${model}, ${cpus.length} cores, ${memGiB} GiB RAM, ${os.platform()}-${os.arch()}, Node.js ${process.version}`;
}
