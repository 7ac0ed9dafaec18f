// Evaluations with benchmarks (POST /evaluations): created after the model is checked, cancelled, deleted, presented;
// the worker reads the stored request here too. Imports models/ and queues/.
export { cancelEvaluation, createEvaluation, deleteEvaluation, evaluationRequestOf, presentEvaluation } from './evaluations.ts';
