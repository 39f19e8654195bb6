/**
 * One mapping to the master's options: `edl train` and `edl k8s master` (the master pod) give the
 * same options for the same flags, --learning-rate included; `edl master` names its optimizer with
 * flags instead of a model definition.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { jobTypeFor, parseJobOptions } from '../src/job/job-options.js';
import { jobMasterOptions, masterCommandOptions } from '../src/job/master-options.js';
import { parseMasterPodArgs } from '../src/k8s/master-pod.js';

const modelOptimizer = { name: 'momentum', params: { learningRate: 0.1, momentum: 0.8 } } as const;
const FLAGS = [
  '--model-def',
  'census',
  '--training-data',
  '/data/train.csv',
  '--validation-data',
  '/data/test.csv',
  '--minibatch-size',
  '32',
  '--num-epochs',
  '3',
  '--evaluation-steps',
  '5',
  '--shuffle',
  '--seed',
  '7',
  '--learning-rate',
  '0.05',
  '--staleness-modulation',
  '--checkpoint-dir',
  'ckpt',
  '--checkpoint-steps',
  '10',
  '--metrics-token',
  'm',
];

describe('job/master-options.ts', () => {
  it('edl train and the k8s master pod give the same master options for the same flags', () => {
    const train = parseJobOptions([...FLAGS, '--num-workers', '6']);
    const trainOptions = jobMasterOptions(train, jobTypeFor('train', train), modelOptimizer, 'census');
    // The pod's own options first, the train options after `--`; --num-workers is the pods'.
    const pod = parseMasterPodArgs(
      ['--job-name', 'mnist', '--image', 'edl:1', '--num-workers', '6', '--port', '50001', '--', ...FLAGS],
      { EDL_JOB_TOKEN: 'secret', EDL_NAMESPACE: 'ml' },
    );
    const podOptions = jobMasterOptions(pod.options, pod.jobType, modelOptimizer, 'census');
    expect(podOptions).toEqual(trainOptions);
    expect(podOptions).toMatchObject({
      jobType: 'training-with-evaluation',
      minibatchSize: 32,
      numEpochs: 3,
      evaluationSteps: 5,
      shuffle: true,
      seed: 7,
      checkpointDir: path.resolve('ckpt'),
      checkpointSteps: 10,
      parameterStore: {
        mode: 'async',
        maxStaleness: 12,
        stalenessModulation: true,
        optimizer: { type: 'momentum', learningRate: 0.05, momentum: 0.8 },
      },
      http: { host: '127.0.0.1', port: 0, metricsToken: 'm' },
    });
  });

  it("without --learning-rate the model definition's rate stays; an unknown parameter fails", () => {
    const pod = parseMasterPodArgs(
      ['--job-name', 'j', '--image', 'i', '--model-def', 'census', '--training-data', 't'],
      {
        EDL_JOB_TOKEN: 't',
        EDL_NAMESPACE: 'ml',
      },
    );
    expect(pod.namespace).toBe('ml');
    expect(
      jobMasterOptions(pod.options, pod.jobType, modelOptimizer, 'census').parameterStore?.optimizer,
    ).toEqual({
      type: 'momentum',
      learningRate: 0.1,
      momentum: 0.8,
    });
    expect(() =>
      jobMasterOptions(pod.options, pod.jobType, { name: 'sgd', params: { learning_rate: 0.1 } }, 'model.ts'),
    ).toThrow(/for a parameter of the sgd optimizer in model\.ts but received "learning_rate"/);
  });

  it('edl master: --optimizer, --momentum and --learning-rate; what is left out keeps the defaults', () => {
    expect(
      masterCommandOptions(
        { optimizer: 'momentum', momentum: 0.5, 'learning-rate': 0.2, 'num-workers': 5, mode: 'async' },
        'training',
      ),
    ).toEqual({
      jobType: 'training',
      shuffle: false,
      parameterStore: {
        mode: 'async',
        maxStaleness: 10,
        optimizer: { type: 'momentum', momentum: 0.5, learningRate: 0.2 },
      },
      http: {},
    });
    expect(masterCommandOptions({ mode: 'sync', 'grads-to-wait': 2 }, 'training').parameterStore).toEqual({
      mode: 'sync',
      gradsToWait: 2,
      maxStaleness: 0,
      optimizer: { type: 'sgd' },
    });
  });
});
