// What every long-lived process runs besides its work: the process runner (config, platform, orderly stop), the
// watchdog (recovery of dead workers' work, the reconciler), the webhook deliverer, and the deployment's metrics.
// Imports queues/ only.
export { runProcess, runService, SERVICE_PORTS, type ListeningApp, type StartProcess } from './process.ts';
export { watchIntervalMs } from './watchdog.ts';
export { reconcile } from './reconciler.ts';
export { recoverOrphans, requeuePending, type RecoveryOptions } from './recovery.ts';
export {
  checkTargetUrl, endpointSecrets, isPrivateAddress, newSigningSecret, refusedTarget, safeLookup, secretHint, sendEvent, startWebhookDeliverer, WebhookTargetError,
  type SendOutcome, type WebhookDeliverer,
} from './webhooks.ts';
export { laneStates, registerDeploymentMetrics, type LaneState } from './deployment-metrics.ts';
