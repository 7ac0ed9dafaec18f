// The worker decides from what the core's events and the engines' errors say by field, never from their words (#58):
// the same events and errors with every message reworded behave the same (the saving phase recorded, the 400 at the
// same field), and a message that reads like one without the field decides nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CoreServerError } from '@ftp/core-client';
import type { UnprocessableEntity } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { PromptTooLong, UnsupportedSchemaError } from '../src/fast-engine/refusals.ts';
import { refusedGrader, refusedRequest } from '../src/inference/engines.ts';
import { recordingJob } from './recording-job.ts';

describe('the saving phase', () => {
  let platform: TestPlatform;
  beforeEach(async () => {
    platform = await openTestPlatform();
  });
  afterEach(() => platform.close());

  const record = async () => (await recordingJob(platform, 'phases')).record;

  it('begins at the log whose stage is saving, whatever its words', async () => {
    const reworded = await record();
    await reworded.onEvent({ event: 'log', level: 'info', message: 'Modell wird geschrieben…', stage: 'saving' });
    expect(reworded.phases().savingAt).toEqual(expect.any(Number));

    const wordsOnly = await record();
    await wordsOnly.onEvent({ event: 'log', level: 'info', message: 'saving the trained model…' });
    await wordsOnly.onEvent({ event: 'log', level: 'info', message: 'saving the trained model…', stage: 'training' });
    expect(wordsOnly.phases().savingAt).toBeNull();
  });
});

describe('a refusal is the 400 at the field it names', () => {
  const loc = (err: Error) => (err as UnprocessableEntity).issues.map((issue) => issue.loc);

  it('a grader the core refused: the core’s field, not its message', () => {
    expect(loc(refusedGrader(new CoreServerError('validation', 'Zeile 1: ungültige Syntax', 'grader.source')))).toEqual([['body', 'grader', 'source']]);
    expect(loc(refusedGrader(new CoreServerError('validation', 'nicht erlaubt', 'grader.graders.a.input[0].content')))).toEqual([['body', 'grader', 'graders', 'a', 'input', '0', 'content']]);
    // the old words, with no field: the grader as a whole
    expect(loc(refusedGrader(new CoreServerError('validation', 'grader.source: line 1: invalid syntax')))).toEqual([['body', 'grader']]);
    // the field is not said twice: "grader.source: line 1: …" at grader.source reads "line 1: …"
    const refused = refusedGrader(new CoreServerError('validation', 'grader.source: line 1: invalid syntax', 'grader.source')) as UnprocessableEntity;
    expect(refused.issues[0]?.msg).toBe('line 1: invalid syntax');
  });

  it('what the fast engine refused: by its kind', () => {
    expect(loc(refusedRequest(new PromptTooLong('zu lang für den Kontext'), {}))).toEqual([['body', 'messages']]);
    expect(loc(refusedRequest(new UnsupportedSchemaError('kein Muster'), {}))).toEqual([['body', 'response_format']]);
    expect(loc(refusedRequest(new UnsupportedSchemaError('kein Muster'), { forced_call: { schema: {}, prefix: '', suffix: '' } }))).toEqual([['body', 'tools']]);
  });
});
