import { CoreV1Api, type KubeConfig, type V1Service } from '@kubernetes/client-node';
import { statusCodeOf } from './pod-api.js';

/**
 * The part of the Kubernetes API the parameter-server pods need besides pods: creating the shards'
 * Services in the job's namespace. The master's Role allows `create` on services and nothing more.
 */
export interface ServiceApi {
  readonly namespace: string;
  /** Creates a Service; `'exists'` when one of that name is there already (a master run again). */
  create(service: V1Service): Promise<'created' | 'exists'>;
}

/** The {@link ServiceApi} of a namespace through `@kubernetes/client-node`. */
export function createServiceApi(kubeConfig: KubeConfig, namespace: string): ServiceApi {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    namespace,
    async create(service) {
      try {
        await core.createNamespacedService({ namespace, body: service });
        return 'created';
      } catch (error) {
        if (statusCodeOf(error) === 409) return 'exists';
        throw error;
      }
    },
  };
}
