/**
 * The options that run `edl k8s master` (what the master pod runs) in a test, against the fake API
 * server whose pods are processes of this host: it listens on a loopback port of its own, workers
 * dial the address it bound rather than its Service, and the job's end deletes pods within 1 s.
 */
export const LOOPBACK_MASTER_POD_OPTIONS = [
  '--host',
  '127.0.0.1',
  '--port',
  '0',
  '--master-address',
  'bound',
  '--delete-grace-seconds',
  '1',
] as const;
