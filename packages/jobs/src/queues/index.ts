// The lowest folder of the jobs package, which every other one stands on: the queue definitions (each lane's name,
// payload and result) that API processes produce to and workers consume, the request an API process hands a worker and
// waits on, and the sentences a row carries when its work ends without finishing. Imports no other folder.
export {
  augmentQueue, batchQueue, benchmarkQueue, evaluateQueue, exportQueue, inferQueue, preflightQueue, sessionQueue, sweepQueue, trainingQueue, QUEUES, type QueueName,
  GenerationDetail, GenerationSettings, GradeResult, InferResult, ModelChoice, PreparingReport, StreamDelta, samplingTemperature,
  type ComparisonPayload, type EvaluatePayload, type GradePayload, type InferPayload, type PreflightPayload,
} from './queues.ts';
export { requestFromWorker, type TimeLimit, type WorkRequestOptions } from './request-work.ts';
export { CANCELLED_BY_USER, evaluationLost, HUB_TOKEN_LOST, MAX_EVALUATION_ATTEMPTS, workerLetGo, workerStopped } from './messages.ts';
