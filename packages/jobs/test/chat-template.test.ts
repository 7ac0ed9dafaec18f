// Whether a chat template writes tools, asked of the families' published templates (core/tests/fixtures) and of
// templates that have none: the answer submit-time checks and chat completions give before any work is queued.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { templateSupportsTools } from '../src/chat-template.ts';
import { tinyModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';

const TEMPLATES = fileURLToPath(new URL('../../../core/tests/fixtures/chat_templates/', import.meta.url));

describe('templateSupportsTools', () => {
  it.each(['Qwen-Qwen2.5-7B-Instruct.jinja', 'meta-llama-Llama-3.3-70B-Instruct.jinja'])('is true for %s', async (file) => {
    expect(templateSupportsTools(await fs.readFile(path.join(TEMPLATES, file), 'utf8'))).toBe(true);
  });

  it('is false for ChatML that writes only content ({% generation %} markers and all), and for one that raises on tools', async () => {
    const chatml = await fs.readFile(path.join(await tinyModelsDir(), TINY_MODEL, 'chat_template.jinja'), 'utf8');
    expect(chatml).toContain('generation');
    expect(templateSupportsTools(chatml)).toBe(false);
    expect(templateSupportsTools("{%- if tools %}{{ raise_exception('no tools here') }}{%- endif %}{{ messages[0].content }}")).toBe(false);
  });
}, 200_000);
