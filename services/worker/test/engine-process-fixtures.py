"""Fixtures of engine-process.test.ts: the tiny model's f16 GGUF, and a copy of it that llama.cpp cannot load.

The broken copy says its byte-level BPE vocabulary is SentencePiece (tokenizer.ggml.model "llama"): llama.cpp then
looks up the <0x0A> piece for a newline, finds none, and its uncaught std::out_of_range aborts the whole process
(what happened once for real, before the GGUF export refused such a vocabulary: core/src/ftcore/export/gguf_vocab.py).

    uv run --frozen python ../services/worker/test/engine-process-fixtures.py OUT    (from core/)
"""
import subprocess
import sys
from pathlib import Path

from gguf import GGUFReader, GGUFValueType, GGUFWriter


def cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "ftcore", *args], check=True, capture_output=True)


def rewritten(source: Path, target: Path, changes: dict[str, str]) -> None:
    """A copy of a GGUF with some string fields changed: every other field and every tensor as they were."""
    reader = GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = GGUFWriter(target, arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = changes.get(name, field.contents())
        kind = field.types[0]
        if kind == GGUFValueType.ARRAY:
            writer.add_key_value(name, value, kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, value, kind)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, tensor.data, raw_shape=tensor.shape[::-1].tolist(), raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main(out: Path) -> None:
    cli("make-tiny-model", "--output_dir", str(out / "tiny"))
    cli("gguf", "--model", str(out / "tiny"), "--output_file", str(out / "good.gguf"), "--quantization", "f16")
    rewritten(out / "good.gguf", out / "aborts.gguf", {"tokenizer.ggml.model": "llama"})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
