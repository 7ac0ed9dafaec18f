// Training jobs and the work around them: a submit checked and queued (or its dry run), cancel, pause, resume and
// delete, the processed datasets they train on, their exports, their evaluation and graders, the pre-flight estimates,
// and how a job reads (presenters, figures). Imports models/, queues/ and runtime/ (the type of a lane's state).
export { jobPageUrl, preflightTrainingJob, submitTrainingJob, type JobExtras } from './submit.ts';
export { CANCELLABLE_STATUSES, cancelTrainingJob, deleteModelResults, deleteTrainingJob, pauseTrainingJob, refuseWhileModelsInUse, resumeTrainingJob } from './job-lifecycle.ts';
export { queueProcessing, readyDataset } from './datasets.ts';
export { queueExport, type NewExport } from './exports.ts';
export { askJudge, checkJudges, checkScoredDataset, evaluateOnWorker, forwardToJudge, gradeOnWorker, judgeModels, routeJudge, type JudgeRequest, type JudgeRoute } from './grading.ts';
export { cancelSweep, cancelTrials, checkSpace, createSweep, deleteSweep, getSweep, presentSweep, trialRequest, type StoredSweepRequest } from './sweeps.ts';
export { createComparison, deleteComparison, judgePairs, presentComparison, type ComparedRow } from './comparisons.ts';
export { summarize, type ComparisonSummary, type PairJudgement, type PositionVerdict } from './pairwise.ts';
export { plainConversation, promptAndReference } from './conversations.ts';
export { estimateOnFleet, overheadSeconds, throughputKey, trainingDevice, type CoreReport } from './preflight.ts';
export {
  finiteOrNull, hasExports, presentCheckpoint, presentExportDetails, presentExportRecord, presentExportSummary, presentJob, presentLane, presentProgress, presentWorker,
} from './presenters.ts';
export { appliedTrainingConfig, trainerOf } from './applied-config.ts';
export { estimatedTime, formatBytes, formatTicks, niceTicks, readableNumber, type TimeEstimate } from './readable.ts';
