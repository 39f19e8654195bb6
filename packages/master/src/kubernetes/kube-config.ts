import { KubeConfig } from '@kubernetes/client-node';

/** Where {@link loadKubeConfig} finds the cluster. */
export interface KubeConfigSource {
  /** A kubeconfig file; default: $KUBECONFIG, then ~/.kube/config, or the in-cluster service account. */
  readonly kubeconfig?: string;
  /** A context of that file other than its current one. */
  readonly context?: string;
}

/**
 * Loads the cluster credentials: the given kubeconfig file, or client-node's default order
 * ($KUBECONFIG, ~/.kube/config, then the pod's service account when running in a cluster).
 */
export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  const config = new KubeConfig();
  if (source.kubeconfig !== undefined) config.loadFromFile(source.kubeconfig);
  else config.loadFromDefault();
  if (source.context !== undefined) config.setCurrentContext(source.context);
  return config;
}
