"""The Ollama Modelfile of a GGUF export: FROM (and ADAPTER), a TEMPLATE in Go's text/template with the turn layout of
the model's Jinja chat template, and the end-of-turn token as stop. The layout is learnt by rendering the Jinja template
around marker texts. A template with tool support gets a second layout for requests that carry tools (Ollama's .Tools,
.ToolCalls and tool messages), learnt the same way, so that Ollama writes the tools where the family's template writes
them and reads the model's calls in the family's own format: Ollama takes the text that opens a call from the first
text inside the `if .ToolCalls` branch, so that branch starts with it (Qwen's `<tool_call>`; nothing for Llama 3's bare
JSON)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..chat import render as render_chat
from ..chat import supports_tools
from ..errors import SpecError

_USER, _ASSISTANT, _SYSTEM = "\u2063U\u2063", "\u2063A\u2063", "\u2063S\u2063"
# Tool results with a quote in them: a template that writes a result as a JSON string (Llama 3) shows it escaped.
_RESULTS = ('\u2063R1"\u2063', '\u2063R2"\u2063')
_TOOLS = [{"type": "function", "function": {"name": f"\u2063f{i}\u2063", "description": f"\u2063d{i}\u2063",
                                             "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}}
          for i in (1, 2)]
_CALLS = [{"id": f"call_{i}", "type": "function",
           "function": {"name": f"\u2063f{i}\u2063", "arguments": json.dumps({"a": f"\u2063v{i}\u2063"})}}
          for i in (1, 2)]


def ollama_modelfile(model: str, tokenizer, adapter: str | None = None, comment: str | None = None) -> str:
    """FROM `model` (and ADAPTER), TEMPLATE (a Go template with the same turn layout as the Jinja one) and the
    end-of-turn token as stop PARAMETER, the one stop id the GGUF metadata carries."""
    lines = [f"# {comment}"] if comment else []
    lines.append(f"FROM {model}")
    if adapter:
        lines.append(f"ADAPTER {adapter}")
    lines.append(f'TEMPLATE """{go_template(tokenizer)}"""')
    lines.append(f"PARAMETER stop {json.dumps(tokenizer.eos_token)}")
    return "\n".join(lines) + "\n"


def go_template(tokenizer) -> str:
    """The Jinja chat template as an Ollama (Go text/template) one; with a layout for requests with tools when the
    template writes tools and calls. Not reproduced: Jinja filters on the content itself (Gemma's and Llama 3's
    `| trim`), and the tools' JSON layout (Ollama writes each tool as compact JSON where a template may indent it)."""
    plain = _messages_template(_Renderer(tokenizer))
    if not supports_tools(tokenizer):
        return plain
    render = _Renderer(tokenizer, _TOOLS)
    return "{{- if .Tools }}" + _messages_template(render, _tool_turns(render)) + "{{ else }}" + plain + "{{ end }}"


class _Renderer:
    """The Jinja template's text for a conversation (with the tools, when given), without the BOS token: Ollama adds
    that itself."""

    def __init__(self, tokenizer, tools: list[dict] | None = None):
        self.tokenizer, self.tools, self.bos = tokenizer, tools, tokenizer.bos_token or ""

    def __call__(self, *messages: dict, generation: bool = False) -> str:
        text = render_chat(self.tokenizer, list(messages), self.tools, add_generation_prompt=generation)
        return text[len(self.bos):] if self.bos and text.startswith(self.bos) else text


def _user(content: str = _USER) -> dict:
    return {"role": "user", "content": content}


def _calling(calls: list[dict]) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": calls}


@dataclass
class _ToolTurns:
    """Inside `range .Messages`: an assistant turn of calls (the text before the first call, the calls, the text after
    the last) and a tool message."""
    opening: str
    calls: str
    closing: str
    tool: str


def _messages_template(render: _Renderer, tool_turns: _ToolTurns | None = None) -> str:
    """Renders the Jinja template around marker contents to learn the text around each turn: the first user turn
    (which may carry a default system preamble, as Qwen2.5's does, or the tools, as Llama 3's does), later user turns,
    assistant turns, the generation prompt, and where a system message goes: a block of its own (ChatML, Llama 3),
    folded into the first user turn (Gemma: its text, a separator, then the user's), or nowhere (a template that drops
    it). Go's `{{-` would trim the turns' own newlines, so the actions never use it after text."""
    one = render(_user())
    first_pre, user_post = one.split(_USER)
    pair = render(_user(), {"role": "assistant", "content": _ASSISTANT})
    assistant_pre, assistant_post = pair[len(one):].split(_ASSISTANT)
    user_pre = render(_user(), {"role": "assistant", "content": _ASSISTANT}, _user())[len(pair):].split(_USER)[0]
    generation_prompt = render(_user(), generation=True)[len(one):]
    try:
        with_system = render({"role": "system", "content": _SYSTEM}, _user())
    except Exception:  # noqa: BLE001 - a template that rejects system messages: leave them out
        with_system = ""
    tools = render.tools
    assistant = assistant_pre + "{{ .Content }}" + assistant_post
    if tool_turns:  # the text both kinds of turn open with, then the branch Ollama reads the call's opening from
        header = _common_prefix(assistant_pre, tool_turns.opening)
        assistant = (header + "{{ if $calls := .ToolCalls }}" + tool_turns.opening[len(header):] + tool_turns.calls
                     + tool_turns.closing + "{{ else }}" + assistant[len(header):] + "{{ end }}")

    def template(system_branch: str, user_open: str, variables: str = "") -> str:
        first, seen = ("{{- $first := true }}", "{{ $first = false }}") if "$first" in user_open else ("", "")
        loop = "{{- range .Messages }}"
        after = ""
        if tool_turns:  # a tool message looks at its neighbours (Qwen groups consecutive results in one turn)
            first += "{{- $previous := \"\" }}"
            loop = "{{- range $i, $_ := .Messages }}"
            after = "{{ $previous = .Role }}"
        body = (first + variables + loop + system_branch
                + '{{ if eq .Role "user" }}' + user_open + seen + "{{ .Content }}" + user_post
                + '{{ else if eq .Role "assistant" }}' + assistant
                + (('{{ else if eq .Role "tool" }}' + tool_turns.tool) if tool_turns else "")
                + "{{ end }}" + after + "{{ end }}" + generation_prompt)
        return _with_tool_list(body, tools) if tools else body

    def first_or(first: str, condition: str = "$first") -> str:
        return user_pre if first == user_pre else f"{{{{ if {condition} }}}}{first}{{{{ else }}}}{user_pre}{{{{ end }}}}"

    if _SYSTEM in with_system and _USER in with_system:
        system_pre, rest = with_system.split(_SYSTEM)
        between = rest.split(_USER)[0]
        if between.endswith(user_pre):  # a block of its own, then the user turn
            system_post = between[:len(between) - len(user_pre)]
            mark_system = "{{ $system = true }}" if first_pre != user_pre else ""
            return template('{{ if eq .Role "system" }}' + mark_system + system_pre + "{{ .Content }}"
                            + system_post + "{{ end }}", first_or(first_pre, "and $first (not $system)"),
                            "{{- $system := false }}" if first_pre != user_pre else "")
        # folded into the first user turn: its own prefix, the system text, a separator, then the user's text
        folded = f"{{{{ if $system }}}}{system_pre}{{{{ $system }}}}{between}{{{{ else }}}}{first_pre}{{{{ end }}}}"
        return template('{{ if eq .Role "system" }}{{ $system = .Content }}{{ end }}',
                        f"{{{{ if $first }}}}{folded}{{{{ else }}}}{user_pre}{{{{ end }}}}", '{{- $system := "" }}')
    return template("", first_or(first_pre))


def _tool_turns(render: _Renderer) -> _ToolTurns:
    """An assistant turn of calls (Ollama's .ToolCalls, each call's .Function.Name and .Function.Arguments) and a tool
    message, as the Jinja template writes them. The turn of calls is what follows the user's turn; a template that
    takes one call a turn (Llama 3) is rendered with one."""
    one = render(_user())
    try:
        calls = _CALLS
        turn = render(_user(), _calling(calls))
    except Exception:  # noqa: BLE001 - jinja's raise_exception: one call a turn
        calls = _CALLS[:1]
        turn = render(_user(), _calling(calls))
    turn = _after(turn, one, "an assistant turn of tool calls")
    spans = [_json_span(turn, lambda value, c=c: isinstance(value, dict) and c["function"]["name"] in value.values())
             for c in calls]
    call_text = turn[spans[0][0]:spans[0][1]]
    arguments = _json_span(call_text, lambda value: value == json.loads(_CALLS[0]["function"]["arguments"]))
    call = (call_text[:arguments[0]] + "{{ json .Function.Arguments }}" + call_text[arguments[1]:]).replace(
        _CALLS[0]["function"]["name"], "{{ .Function.Name }}")
    between = turn[spans[0][1]:spans[1][0]] if len(spans) > 1 else ""
    # The branch's first text opens the calls (Ollama's parseTag): the separator comes after each call but the last.
    each = call + (f"{{{{ if gt (len (slice $calls $k)) 1 }}}}{between}{{{{ end }}}}" if between else "")
    return _ToolTurns(opening=turn[:spans[0][0]], calls="{{ range $k, $_ := $calls }}" + each + "{{ end }}",
                      closing=turn[spans[-1][1]:], tool=_tool_message(render, calls))


def _tool_message(render: _Renderer, calls: list[dict]) -> str:
    """A tool message: its result raw or as a JSON string, with the text around it; where the template writes
    consecutive results in one turn (Qwen), the opening and closing text depend on the neighbouring messages."""
    called = render(_user(), _calling(calls))
    result = [{"role": "tool", "tool_call_id": c["id"], "content": r} for c, r in zip(_CALLS, _RESULTS)]
    single = _after(render(_user(), _calling(calls), result[0]), called, "a tool message")
    double = _after(render(_user(), _calling(calls), *result), called, "two tool messages")
    as_json = json.dumps(_RESULTS[0], ensure_ascii=False) in single
    written = [json.dumps(r, ensure_ascii=False) if as_json else r for r in _RESULTS]
    if written[0] not in single:
        raise SpecError("the chat template does not write a tool message's content; its tool support cannot be "
                        "written as an Ollama template")
    content = "{{ json .Content }}" if as_json else "{{ .Content }}"
    open_, close = single.split(written[0])
    middle = double[len(open_ + written[0]):len(double) - len(written[1] + close)]
    split = next((k for k in range(len(middle), -1, -1) if close.startswith(middle[:k]) and open_.endswith(middle[k:])),
                 None)
    if split is None or middle == close + open_:  # each result a turn of its own
        return open_ + content + close
    close_before_tool, open_after_tool = middle[:split], middle[split:]
    next_is_tool = '(and (gt (len (slice $.Messages $i)) 1) (eq (index (slice $.Messages $i) 1).Role "tool"))'
    return (f'{{{{ if eq $previous "tool" }}}}{open_after_tool}{{{{ else }}}}{open_}{{{{ end }}}}' + content
            + f"{{{{ if {next_is_tool} }}}}{close_before_tool}{{{{ else }}}}{close}{{{{ end }}}}")


def _with_tool_list(template: str, tools: list[dict]) -> str:
    """Where the Jinja template wrote the two marker tools, Ollama's tools, with the same text between them."""
    spans = [_json_span(template, lambda value, t=t: value == t, required=False) for t in tools]
    if spans[0] is None and spans[1] is None:
        return template
    if spans[0] is None or spans[1] is None:
        raise SpecError("the chat template writes only some of the tools; cannot write it as an Ollama template")
    separator = template[spans[0][1]:spans[1][0]]
    listed = f"{{{{ range $k, $t := $.Tools }}}}{{{{ if $k }}}}{separator}{{{{ end }}}}{{{{ json $t }}}}{{{{ end }}}}"
    # Written once per place the template puts them (first user turn, system turn): each place in turn.
    return _with_tool_list(template[:spans[0][0]] + listed + template[spans[1][1]:], tools)


def _json_span(text: str, matches, required: bool = True) -> tuple[int, int] | None:
    """The first JSON object in `text` whose value `matches`, as (start, end)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            pass
        else:
            if matches(value):
                return start, end
        start = text.find("{", start + 1)
    if required:
        raise SpecError("the chat template writes tool calls in a form that is not JSON; its tool support cannot be "
                        "written as an Ollama template")
    return None


def _after(text: str, prefix: str, what: str) -> str:
    if not text.startswith(prefix):
        raise SpecError(f"the chat template renders {what} by changing the turns before it; its tool support cannot be "
                        "written as an Ollama template")
    return text[len(prefix):]


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
