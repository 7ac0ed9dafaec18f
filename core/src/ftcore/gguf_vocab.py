"""The tokenizer half of a GGUF export: vocabulary, merges/scores, special ids and chat template as llama.cpp
reads them, and the Ollama Modelfile (a Go template derived from the model's Jinja chat template)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import SpecError

# Byte-level BPE pre-tokenizer regexes → the llama.cpp `tokenizer.ggml.pre` name that splits text the same way.
_GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
# Qwen2, 2.5 and 3 split text with this (make-tiny-model's Qwen tokenizers too).
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
               r"\s+(?!\S)|\s+")
_PRE_BY_REGEX = {
    _GPT2_REGEX: "gpt-2",
    QWEN2_REGEX: "qwen2",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+":
        "llama-bpe",
}
_GENERATION_TAG = re.compile(r"\{%-?\s*(end)?generation\s*-?%\}")


def chat_template_for_gguf(tokenizer) -> str:
    """The tokenizer's chat template without transformers' `{% generation %}` markers, which llama.cpp's and
    Ollama's template engines do not know."""
    if not tokenizer.chat_template:
        raise SpecError("the model folder has no chat template; a GGUF without one cannot chat (train or import "
                        "the model with the core, which always saves one)")
    return _GENERATION_TAG.sub("", tokenizer.chat_template)


def write_tokenizer(writer, model_dir: Path, tokenizer) -> None:
    spec = json.loads((model_dir / "tokenizer.json").read_text())
    kind = spec["model"]["type"]
    special_ids = set(tokenizer.all_special_ids)
    template = chat_template_for_gguf(tokenizer)  # fails early when there is none
    if kind == "BPE" and not spec["model"].get("byte_fallback"):
        _write_byte_level_bpe(writer, spec, tokenizer, special_ids, model_dir)
    elif kind in ("BPE", "Unigram") and spec["model"].get("byte_fallback"):
        _write_sentencepiece(writer, spec, special_ids)
    else:
        raise SpecError(f"tokenizer type {kind} (byte_fallback={spec['model'].get('byte_fallback')}) cannot be "
                        "written as GGUF; supported: byte-level BPE (GPT-2/Llama 3/Qwen style) and SentencePiece "
                        "BPE or Unigram with byte fallback (Gemma/Llama 2 style)")
    eot = tokenizer.eos_token_id
    if eot is None:
        raise SpecError("the tokenizer has no eos (end-of-turn) token; set eos_token in tokenizer_config.json")
    writer.add_eos_token_id(eot)
    writer.add_eot_token_id(eot)
    for name, value in (("bos", tokenizer.bos_token_id), ("pad", tokenizer.pad_token_id),
                        ("unk", tokenizer.unk_token_id)):
        if value is not None:
            getattr(writer, f"add_{name}_token_id")(value)
    writer.add_add_bos_token(bool(getattr(tokenizer, "add_bos_token", False)) and tokenizer.bos_token_id is not None)
    writer.add_add_eos_token(False)
    writer.add_chat_template(template)


def _write_byte_level_bpe(writer, spec: dict, tokenizer, special_ids: set[int], model_dir: Path) -> None:
    import gguf

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(_pre_tokenizer_name(spec.get("pre_tokenizer")))
    by_id = {i: t for t, i in tokenizer.get_vocab().items()}
    added = {t["id"]: t for t in spec.get("added_tokens", [])}
    tokens, types = [], []
    for i in range(len(by_id)):
        if i not in by_id:
            raise SpecError(f"tokenizer vocabulary has a hole at id {i}; cannot write a GGUF vocabulary")
        tokens.append(by_id[i])
        if i in added:
            types.append(gguf.TokenType.CONTROL if added[i]["special"] or i in special_ids
                         else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    merges = gguf.SpecialVocab(model_dir, load_merges=True).merges
    if not merges:
        raise SpecError("byte-level BPE tokenizer without merges; tokenizer.json is incomplete")
    writer.add_token_merges(merges)


def _pre_tokenizer_name(pre: dict | None) -> str:
    if pre and pre.get("type") == "ByteLevel" and pre.get("use_regex", True):
        return "gpt-2"
    splits = [p for p in (pre or {}).get("pretokenizers", []) if p.get("type") == "Split"]
    if len(splits) == 1 and splits[0]["pattern"].get("Regex") in _PRE_BY_REGEX:
        return _PRE_BY_REGEX[splits[0]["pattern"]["Regex"]]
    raise SpecError(f"pre-tokenizer {json.dumps(pre)[:200]} has no llama.cpp equivalent known to this exporter; "
                    f"supported: {sorted(set(_PRE_BY_REGEX.values()))}")


def _write_sentencepiece(writer, spec: dict, special_ids: set[int]) -> None:
    """Pieces with scores, as llama.cpp's SentencePiece ("llama") tokenizer reads them: it merges the adjacent pair
    whose joined piece scores highest, so a BPE piece scores minus the rank of the first merge that makes it (what
    SentencePiece itself stores); a Unigram piece keeps its log-probability."""
    import gguf

    model = spec["model"]
    if model["type"] == "Unigram":
        pieces = [piece for piece, _ in model["vocab"]]
        scores = [float(score) for _, score in model["vocab"]]
    else:
        pieces = [piece for piece, _ in sorted(model["vocab"].items(), key=lambda item: item[1])]
        rank: dict[str, int] = {}
        for k, merge in enumerate(model["merges"]):
            rank.setdefault("".join(merge) if isinstance(merge, list) else merge.replace(" ", ""), k)
        scores = [-float(rank[p]) if p in rank else 0.0 for p in pieces]
    added = {t["id"]: t for t in spec.get("added_tokens", [])}
    types = []
    for i, piece in enumerate(pieces):
        if i == model.get("unk_id") or piece == model.get("unk_token"):
            types.append(gguf.TokenType.UNKNOWN)
        elif re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", piece):
            types.append(gguf.TokenType.BYTE)
        elif i in special_ids or added.get(i, {}).get("special"):
            types.append(gguf.TokenType.CONTROL)
        elif i in added:
            types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_add_space_prefix(False)
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types(types)


def ollama_modelfile(model: str, tokenizer, adapter: str | None = None, comment: str | None = None) -> str:
    """FROM `model` (and ADAPTER), TEMPLATE (a Go template with the same turn layout as the Jinja one) and the
    end-of-turn token as stop PARAMETER, the one stop id the GGUF metadata carries."""
    lines = [f"# {comment}"] if comment else []
    lines.append(f"FROM {model}")
    if adapter:
        lines.append(f"ADAPTER {adapter}")
    lines.append(f'TEMPLATE """{_go_template(tokenizer)}"""')
    lines.append(f"PARAMETER stop {json.dumps(tokenizer.eos_token)}")
    return "\n".join(lines) + "\n"


def _go_template(tokenizer) -> str:
    """The Jinja chat template as an Ollama (Go text/template) one. Renders the Jinja template around marker contents
    to learn the text around each turn: the first user turn (which may carry a default system preamble, as Qwen2.5's
    does), later user turns, assistant turns, the generation prompt, and where a system message goes: a block of its
    own (ChatML, Llama 3), folded into the first user turn (Gemma: its text, a separator, then the user's), or nowhere
    (a template that drops it). Go's `{{-` would trim the turns' own newlines, so the actions never use it after text.
    Not reproduced: Jinja filters on the content itself (Gemma's `| trim`)."""
    bos = tokenizer.bos_token or ""
    user, assistant, system = "\u2063U\u2063", "\u2063A\u2063", "\u2063S\u2063"

    def render(*turns: tuple[str, str], generation: bool = False) -> str:
        messages = [{"role": role, "content": content} for role, content in turns]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)
        return text[len(bos):] if bos and text.startswith(bos) else text  # Ollama adds BOS itself

    one = render(("user", user))
    first_pre, user_post = one.split(user)
    pair = render(("user", user), ("assistant", assistant))
    assistant_pre, assistant_post = pair[len(one):].split(assistant)
    user_pre = render(("user", user), ("assistant", assistant), ("user", user))[len(pair):].split(user)[0]
    generation_prompt = render(("user", user), generation=True)[len(one):]
    try:
        with_system = render(("system", system), ("user", user))
    except Exception:  # noqa: BLE001 - a template that rejects system messages: leave them out
        with_system = ""

    def template(system_branch: str, user_open: str, variables: str = "") -> str:
        first, seen = ("{{- $first := true }}", "{{ $first = false }}") if "$first" in user_open else ("", "")
        return (first + variables + "{{- range .Messages }}" + system_branch
                + '{{ if eq .Role "user" }}' + user_open + seen + "{{ .Content }}" + user_post
                + '{{ else if eq .Role "assistant" }}' + assistant_pre + "{{ .Content }}" + assistant_post
                + "{{ end }}{{ end }}" + generation_prompt)

    def first_or(first: str, condition: str = "$first") -> str:
        return user_pre if first == user_pre else f"{{{{ if {condition} }}}}{first}{{{{ else }}}}{user_pre}{{{{ end }}}}"

    if system in with_system and user in with_system:
        system_pre, rest = with_system.split(system)
        between = rest.split(user)[0]
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
