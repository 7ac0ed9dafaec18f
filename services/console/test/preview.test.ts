// The processing form's first guess and live preview (pure functions of the page): a column is never guessed for both
// the user and the assistant turn (#38: a "question;answer" column read from a semicolon file became both), and the
// preview says so when both turns are given the same mapping by hand.
import { describe, expect, it } from 'vitest';
import { guessMappings, previewRecords } from '../web/src/pages/datasets/preview.ts';

describe('guessMappings', () => {
  it('maps question and answer columns to the user and assistant turns', () => {
    expect(guessMappings(['id', 'question', 'answer'])).toEqual({
      user_field: { type: 'column', value: 'question' },
      assistant_field: { type: 'column', value: 'answer' },
    });
    expect(guessMappings(['prompt', 'chosen', 'rejected'])).toEqual({
      user_field: { type: 'column', value: 'prompt' },
      chosen_field: { type: 'column', value: 'chosen' },
      rejected_field: { type: 'column', value: 'rejected' },
    });
  });

  it('never guesses one column for two turns', () => {
    expect(guessMappings(['question;answer'])).toEqual({ user_field: { type: 'column', value: 'question;answer' } });
    expect(guessMappings(['user_input_answer', 'response'])).toEqual({
      user_field: { type: 'column', value: 'user_input_answer' },
      assistant_field: { type: 'column', value: 'response' },
    });
  });
});

describe('previewRecords', () => {
  const rows = [{ question: 'Why?', answer: 'Because.' }];
  it('refuses the same mapping for both turns, as the service does', () => {
    const same = { type: 'column', value: 'question' } as const;
    const preview = previewRecords('language_modeling', { user_field: same, assistant_field: same }, rows, ['question', 'answer'], true);
    expect(preview.records).toEqual([]);
    expect(preview.problems).toEqual(['user_field and assistant_field are the same mapping, so the model would only learn to repeat the prompt; map assistant_field to the answers']);
    const fine = previewRecords('language_modeling', { user_field: same, assistant_field: { type: 'column', value: 'answer' } }, rows, ['question', 'answer'], true);
    expect(fine).toEqual({ records: [{ messages: [{ role: 'user', content: 'Why?' }, { role: 'assistant', content: 'Because.' }] }], problems: [] });
  });
});
