// Graders' own rules, as the schema checks them wherever a grader is read: formulas are arithmetic over the graders'
// names (the same grammar as the core's Formula), templates name variables of item and sample.
import { describe, expect, it } from 'vitest';
import { formulaProblem, graderItemFields, templateProblem } from '../src/graders.ts';

describe('a multi grader formula', () => {
  it.each(['a', '0.5 * a + 0.5 * b', '-(a - b) / 2', 'max(a, b, 0.1) * abs(min(a, 1e-3))', '.5*a+1.5e2'])('%s is one', (formula) => {
    expect(formulaProblem(formula, ['a', 'b'])).toBeUndefined();
  });

  it.each([
    ['a + c', '"c" names no grader'],
    ['a ** 2', '** is not allowed'],
    ["__import__('os')", '"__import__" names no grader'],
    ['a.real', '"." is not allowed'],
    ['a +', 'ends too soon'],
    ['(a', 'expected )'],
    ['a b', '"b" is not allowed here'],
    ['', 'is empty'],
  ])('%s is not: %s', (formula, message) => {
    expect(formulaProblem(formula, ['a', 'b'])).toContain(message);
  });
});

describe('a grader template', () => {
  it('names variables of the item and the sample', () => {
    expect(templateProblem('{{ item.answer }} / {{sample.output_json.city.name}} / {{sample.output_text}}')).toBeUndefined();
    expect(templateProblem('{{ sample.output }}')).toContain('is not a variable');
    expect(templateProblem('{{ secrets.key }}')).toContain('is not a variable');
  });

  it('reads the item fields its templates and reference_field name, nested graders included', () => {
    expect(graderItemFields({ type: 'multi', graders: {
      a: { type: 'string_check', reference: '{{item.answer}} {{item.meta.country}}', input: '{{sample.output_text}}' },
      b: { type: 'text_similarity', reference_field: 'gold' },
    } })).toEqual(['answer', 'meta', 'gold']);
  });
});
