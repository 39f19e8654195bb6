import type { Command, CommandIO } from '../command.js';
import { UsageError } from '../command.js';
import { deleteJob } from '../k8s/delete.js';
import { logs } from '../k8s/logs.js';
import { manifest } from '../k8s/manifest.js';
import { masterPod } from '../k8s/master-pod.js';
import { status } from '../k8s/status.js';
import { submit } from '../k8s/submit.js';

const usage = `Usage: edl k8s submit   --image IMAGE --namespace NS --num-workers N [k8s options] [train options]
       edl k8s manifest --image IMAGE --namespace NS --num-workers N [k8s options] [train options] [--rbac]
       edl k8s status   JOB --namespace NS [--json]
       edl k8s logs     JOB --namespace NS [--worker ID] [--tail N]
       edl k8s delete   JOB --namespace NS
       edl k8s master   ...   (what the master pod runs; not for hands)

Runs a job on Kubernetes: 'submit' creates a Secret with the job token, the master pod and its
Service; the master (the same code as 'edl train') creates the worker pods, watches them and
relaunches lost ones: preempted, evicted or deleted workers always, failed ones up to
--max-relaunches. With --num-ps N in the train options, the master also runs N parameter-server
pods, each behind a Service <job>-ps-<i> (workers get these addresses in EDL_PS_ADDRESSES), and
relaunches a lost one under its Service from the last checkpoint. 'manifest' prints the same objects as YAML for kubectl apply (with --rbac, the
ServiceAccount, Role and RoleBinding of deploy/k8s/rbac.yaml too).

Kubernetes options:
  --image IMAGE               the elasticdl-ts image (deploy/Dockerfile), for master and workers
  --namespace NS              the job's namespace (default: the context's, else 'default')
  --num-workers N             worker pods (default 1)
  --job-name NAME             a DNS label (default edl-<random>); names the pods, Service, Secret
  --max-relaunches N          relaunches of workers that failed on their own (default 3)
  --worker-cpu Q  --worker-memory Q  --worker-gpu N      requests = limits (GPUs: nvidia.com/gpu)
  --master-cpu Q  --master-memory Q
  --service-account NAME      the master's (default edl-master, see deploy/k8s/rbac.yaml)
  --image-pull-policy P       Always | IfNotPresent | Never
  --data-claim PVC            a PersistentVolumeClaim mounted in master and workers
  --data-mount-path DIR       where (default /data): give data and checkpoint paths under it
  --s3-credentials-secret NAME   a Secret (in the job's namespace) whose keys become environment
                              variables of the master and worker pods: AWS_ACCESS_KEY_ID,
                              AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION... for s3://
                              data and checkpoints
  --worker-service-account NAME  the worker pods' service account, for credentials bound to it
                              (EKS IRSA: annotated with eks.amazonaws.com/role-arn); not the
                              master's --service-account, whose RBAC role creates the pods
  --port N                    the master's gRPC port (default 50001)
  --kubeconfig FILE  --context NAME    the cluster (default: $KUBECONFIG, ~/.kube/config)
Parameter-server pods (a job with --num-ps N; relaunches per shard bounded by --max-relaunches):
  --ps-cpu Q  --ps-memory Q   requests = limits of each shard's pod
  --ps-priority-class NAME    their priorityClassName: a class above the workers', created
                              beforehand (deploy/k8s/ps-priority-class.yaml)
  --ps-service-account NAME   their service account (default: --worker-service-account); they
                              get the --s3-credentials-secret and --data-claim as workers do
  --ps-port N                 their port and their Services' (default 50002)
Train options: as for 'edl train' (--model-def, --training-data, --validation-data, ...), paths
as seen inside the pods. With data and --checkpoint-dir in S3 (s3://..., --s3-endpoint for other
stores) no volume is needed: a relaunched master restores from the checkpoint there.

Example:
  edl k8s submit --image registry.example.com/elasticdl-ts:0.1.0 --namespace ml --num-workers 4 \\
    --job-name mnist --data-claim edl-data --worker-cpu 2 --worker-memory 4Gi \\
    --model-def cifar10-small --training-data /data/train --checkpoint-dir /data/ckpt
  edl k8s submit --image registry.example.com/elasticdl-ts:0.1.0 --namespace ml --num-workers 4 \\
    --job-name mnist-s3 --s3-credentials-secret s3-creds --model-def mnist \\
    --training-data s3://bucket/mnist/train/ --checkpoint-dir s3://bucket/mnist/ckpt/
  edl k8s submit --image registry.example.com/elasticdl-ts:0.1.0 --namespace ml --num-workers 4 \\
    --job-name ctr --data-claim edl-data --ps-memory 8Gi --ps-priority-class edl-ps \\
    --model-def deepfm --training-data /data/clicks --checkpoint-dir /data/ckpt --num-ps 2
  edl k8s status mnist --namespace ml
  edl k8s logs mnist --namespace ml --worker worker-3`;

/** The subcommands (in ../k8s/): each checks its arguments before the Kubernetes client loads. */
const subcommands: Record<string, (argv: string[], io: CommandIO) => Promise<number>> = {
  submit,
  manifest,
  status,
  logs,
  delete: deleteJob,
  master: masterPod,
};

/** `edl k8s`: run jobs on Kubernetes. */
export const command: Command = {
  name: 'k8s',
  usage,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub === undefined)
      throw new UsageError('missing a subcommand: submit, manifest, status, logs or delete');
    const run = Object.hasOwn(subcommands, sub) ? subcommands[sub] : undefined;
    if (run === undefined)
      throw new UsageError(`unknown subcommand '${sub}': expected submit, manifest, status, logs or delete`);
    return run(rest, io);
  },
};
