// What a grader says of itself that a JSON Schema cannot check, checked where the request is read (native
// reward_config, /v1's reinforcement graders and /v1/fine_tuning/alpha/graders): its templates name only variables of
// the item and the sample, and a multi grader's formula is arithmetic over its graders' names. The core checks the same
// (core/src/ftcore/graders.py) and grades.

const TEMPLATE = /\{\{\s*(.*?)\s*\}\}/g;
const VARIABLE = /^(item|sample)((?:\.[A-Za-z_][\w-]*)+)$/;
const SAMPLE_FIELDS = ['output_text', 'output_json'];

export interface GraderProblem {
  /** Path below the grader. */
  path: Array<string | number>;
  message: string;
  /** The 422 entry's type when not `custom`. */
  type?: 'missing';
}

/** Why a template cannot be rendered: a {{…}} that is no variable of item or sample. */
export function templateProblem(text: string): string | undefined {
  for (const [whole, inner] of text.matchAll(TEMPLATE)) {
    const found = VARIABLE.exec(inner!);
    if (!found || (found[1] === 'sample' && !SAMPLE_FIELDS.includes(found[2]!.slice(1).split('.')[0]!))) {
      return `${whole} is not a variable; use {{item.<field>}}, {{sample.output_text}} or {{sample.output_json.<field>}}`;
    }
  }
  return undefined;
}

/** The item fields a template reads (the first name of each {{item.<field>…}}). */
export function templateItemFields(text: string): string[] {
  return [...text.matchAll(TEMPLATE)].flatMap(([, inner]) => {
    const found = VARIABLE.exec(inner!);
    return found && found[1] === 'item' ? [found[2]!.slice(1).split('.')[0]!] : [];
  });
}

/** Why a multi grader's calculate_output is no formula over `names`: numbers, the names, + - * /, parentheses, and
 *  min, max, abs of one or more arguments. */
export function formulaProblem(text: string, names: readonly string[]): string | undefined {
  const tokens = text.match(/\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|[A-Za-z_]\w*|\S/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const fail = (why: string): never => {
    throw new Error(why);
  };
  const expect = (token: string) => (tokens[at] === token ? at++ : fail(`expected ${token} at ${peek() === undefined ? 'the end' : JSON.stringify(peek())}`));
  const primary = (): void => {
    const token = tokens[at++];
    if (token === undefined) fail('the formula ends too soon');
    if (/^(\d|\.\d)/.test(token!)) return;
    if (token === '(') {
      expression();
      expect(')');
      return;
    }
    if (/^[A-Za-z_]/.test(token!)) {
      if (['min', 'max', 'abs'].includes(token!) && peek() === '(') {
        at++;
        expression();
        while (peek() === ',') {
          at++;
          expression();
        }
        expect(')');
        return;
      }
      if (!names.includes(token!)) fail(`${JSON.stringify(token)} names no grader; graders: ${names.join(', ')}`);
      return;
    }
    fail(`${JSON.stringify(token)} is not allowed; a formula has numbers, grader names, + - * /, parentheses, min, max and abs`);
  };
  const unary = (): void => {
    while (peek() === '-' || peek() === '+') at++;
    primary();
  };
  const term = (): void => {
    unary();
    while (peek() === '*' || peek() === '/') {
      at++;
      if (peek() === '*') fail('** is not allowed; a formula has + - * /, parentheses, min, max and abs');
      unary();
    }
  };
  const expression = (): void => {
    term();
    while (peek() === '+' || peek() === '-') {
      at++;
      term();
    }
  };
  try {
    if (tokens.length === 0) fail('the formula is empty');
    expression();
    if (at < tokens.length) fail(`${JSON.stringify(tokens[at])} is not allowed here`);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

export type GraderLike = { type: string; reference_field?: string; reference?: unknown; input?: unknown; graders?: Record<string, GraderLike>; calculate_output?: string };

/** Every problem of a grader (or reward_config item), nested graders included. */
export function graderProblems(grader: GraderLike): GraderProblem[] {
  const problems: GraderProblem[] = [];
  if (grader.type === 'string_check' || grader.type === 'text_similarity') {
    if (grader.reference_field === undefined && grader.reference === undefined) {
      problems.push({ path: ['reference_field'], message: `${grader.type} needs reference_field (a dataset column) or reference (a template such as {{item.answer}})`, type: 'missing' });
    }
    for (const key of ['input', 'reference'] as const) {
      const text = grader[key];
      const problem = typeof text === 'string' ? templateProblem(text) : undefined;
      if (problem) problems.push({ path: [key], message: problem });
    }
  }
  if (grader.type === 'multi' && grader.graders) {
    for (const [name, sub] of Object.entries(grader.graders)) problems.push(...graderProblems(sub).map((p) => ({ ...p, path: ['graders', name, ...p.path] })));
    const problem = formulaProblem(grader.calculate_output ?? '', Object.keys(grader.graders));
    if (problem) problems.push({ path: ['calculate_output'], message: problem });
  }
  return problems;
}

/** The item fields a grader reads through its templates and reference_field, nested graders included. */
export function graderItemFields(grader: GraderLike): string[] {
  const own = [grader.reference_field, grader.reference, grader.input].flatMap((text, i) =>
    typeof text !== 'string' ? [] : i === 0 ? [text] : templateItemFields(text),
  );
  return [...new Set([...own, ...Object.values(grader.graders ?? {}).flatMap(graderItemFields)])];
}
