/**
 * Node.js flags of the worker processes that `edl train` and `edl master` start themselves.
 *
 * A training worker allocates at a steady rate (a minibatch, the gradients read back, the request
 * to the master: about 1 MB a step, most of it outside the JavaScript heap). V8 sets the limit of a
 * small old generation so close to its live size that the worker then starts a full mark-compact
 * every 5 or 6 steps: 30 in a 250-step MNIST job, against 3 for `model.fit` in one process. An old
 * generation that starts at 64 MB takes that to 13, and the CPU of V8's helper threads from 1.7 to
 * 1.35 s (bench/RESULTS.md). The flag cannot go in NODE_OPTIONS, so a worker started by hand takes
 * it on the command line: `node --initial-old-space-size=64 "$(command -v edl)" worker ...`.
 */
export const WORKER_NODE_FLAGS: readonly string[] = ['--initial-old-space-size=64'];
