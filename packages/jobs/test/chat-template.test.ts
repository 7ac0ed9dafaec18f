// Whether a chat template writes tools, asked of the families' published templates (core/tests/fixtures) and of
// templates that have none: the answer submit-time checks and chat completions give before any work is queued.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { PlainMessage } from '@ftp/schema';
import { renderChatTemplate, templateSupportsTools } from '../src/models/chat-template.ts';
import { mayBeCall, parseToolCalls, toolCallFormat } from '../src/openai/tool-call-output.ts';
import { tinyModelsDir, TINY_MODEL } from '../../../test/support/tiny-model.ts';

const TEMPLATES = fileURLToPath(new URL('../../../core/chat_templates/', import.meta.url));

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

describe('parseToolCalls reads back what the families\' templates write', () => {
  const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
  const question: PlainMessage[] = [{ role: 'user', content: 'Weather in Paris?' }];
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

  it.each([
    ['Qwen-Qwen2.5-7B-Instruct.jinja', '<|im_end|>', 'hermes'],
    ['meta-llama-Llama-3.3-70B-Instruct.jinja', '<|eot_id|>', 'llama3'],
  ])('%s: the answer after the generation prompt is the call', async (file, end, format) => {
    const template = await fs.readFile(path.join(TEMPLATES, file), 'utf8');
    expect(toolCallFormat(template)).toBe(format);
    const prompt = renderChatTemplate(template, question, { tools, addGenerationPrompt: true });
    const whole = renderChatTemplate(template, [...question, { role: 'assistant', content: '', tool_calls: [call] }], { tools, addGenerationPrompt: false });
    expect(whole.startsWith(prompt)).toBe(true);
    const answer = whole.slice(prompt.length).split(end)[0]!;
    expect(parseToolCalls(answer, ['get_weather'])).toEqual({ content: null, calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    expect(parseToolCalls(answer, ['get_time'])).toEqual({ content: answer, calls: [] }); // not one of the tools
  });

  it('keeps text around Hermes calls, takes several, and leaves a broken call as text', () => {
    const two = 'Let me look.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>';
    expect(parseToolCalls(two, ['a', 'b'])).toEqual({ content: 'Let me look.', calls: [{ name: 'a', arguments: '{"x":1}' }, { name: 'b', arguments: '{}' }] });
    const broken = '<tool_call>\n{"name": "a", "arguments": {"x": \n</tool_call>';
    expect(parseToolCalls(broken, ['a'])).toEqual({ content: broken, calls: [] });
    expect(parseToolCalls('It is sunny.', ['a'])).toEqual({ content: 'It is sunny.', calls: [] });
  });

  it('mayBeCall holds back what could still open a call', () => {
    for (const text of ['', ' ', '<tool', '<tool_call>\n{"na', '{"name"', '<|python']) expect(mayBeCall(text), text).toBe(true);
    for (const text of ['It', '<b>', ' sunny']) expect(mayBeCall(text), text).toBe(false);
  });
});
