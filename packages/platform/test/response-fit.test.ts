// fitToSchema: a presented value repaired to fit its response schema as the serializer checks it (#56): a field at
// fault becomes null where it may be null, is left out where it may be absent, and a value whose required fields do not
// fit is refused with its issues.
import { expect, it } from 'vitest';
import { z } from 'zod';
import { fitToSchema } from '../src/http/response-fit.ts';

const Progress = z.object({ step: z.number().int().nonnegative(), eta_seconds: z.number().nonnegative().nullable(), note: z.string().optional() });
const Job = z.object({ id: z.string(), progress: Progress.nullable(), tags: z.array(z.string().nullable()) });

it('leaves a value that fits as it is', () => {
  const job = { id: 'j', progress: { step: 1, eta_seconds: 2 }, tags: ['a'] };
  expect(fitToSchema(Job, job)).toEqual({ ok: true, value: job, repaired: [] });
});

it('makes a nullable field null, drops an optional one, and nulls the nearest nullable parent of a required one', () => {
  const fitted = fitToSchema(Job, { id: 'j', progress: { step: 3, eta_seconds: -0.1, note: 7 }, tags: ['a', 5] });
  expect(fitted).toEqual({ ok: true, value: { id: 'j', progress: { step: 3, eta_seconds: null }, tags: ['a', null] }, repaired: ['progress.eta_seconds', 'progress.note', 'tags.1'] });
  expect(fitToSchema(Job, { id: 'j', progress: { step: -1, eta_seconds: 1 }, tags: [] })).toMatchObject({ ok: true, value: { progress: null }, repaired: ['progress'] });
});

it('never changes the value it was given', () => {
  const job = { id: 'j', progress: { step: 3, eta_seconds: Number.NaN }, tags: [] };
  fitToSchema(Job, job);
  expect(job.progress.eta_seconds).toBeNaN();
});

it('refuses a value whose required field cannot be repaired, with the issues', () => {
  const fitted = fitToSchema(Job, { id: 5, progress: null, tags: [] });
  expect(fitted).toMatchObject({ ok: false, issues: [{ path: ['id'] }] });
});
