#!/usr/bin/env node
import module from 'node:module';

// A job starts a process per worker, each loading TensorFlow.js, gRPC and the CLI again: on Node
// >= 22.1 their compiled code is cached on disk (the OS temp directory), so every process after the
// first starts faster. Node 20 has no such cache and skips this.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const { runCli } = await import('../main.js');

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  isTTY: Boolean(process.stderr.isTTY),
});
