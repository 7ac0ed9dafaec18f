// The OpenAI-compatible mapping: a chat completion request as the engines take it (tools checked against the model's
// template, answers read back as tool calls), a Responses request as the chat it runs as and its answer as a Response
// (whole or streamed), and a batch's lines. Imports models/ and queues/.
export { parseToolCalls, type ParsedAnswer, type ParsedCall, type ToolCallFormat } from './tool-call-output.ts';
export { forcedCall, readAnswer, ToolStream, type AnswerCall, type Delta, type ToolUse } from './chat-tools.ts';
export { chatUsage, prepareChat, readAnswers, type ChatAnswer, type ChatRun } from './chat-requests.ts';
export { refuseUnsupported, toChatRequest } from './responses-input.ts';
export { finished, outputItems, ResponseEvents, responseFrame, type ResponseEvent } from './responses-output.ts';
export {
  answeredLine, BATCH_ENDPOINTS, cancelBatch, chatCompletionObject, failedLine, groupLines, prepareBatchLine, readBatchInput, unansweredLine,
  type BatchLine, type PreparedLine,
} from './batches.ts';
