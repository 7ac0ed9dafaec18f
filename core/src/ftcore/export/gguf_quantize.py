"""K-quants (Q4_K_M) with llama.cpp's own quantizer, without a native build: the prebuilt libllama that ships in
the npm package @node-llama-cpp/<platform> (installed with the worker's node-llama-cpp), called through ctypes.

The `gguf` package can only read K-quants. llama_model_quantize takes its parameters as a struct whose layout
belongs to one llama.cpp release, so the library is used only when its build metadata names that release.
"""
from __future__ import annotations

import ctypes
import json
import os
import platform
import sys
from pathlib import Path

# The llama.cpp release of the node-llama-cpp binaries whose include/llama.h the struct below copies.
LLAMA_CPP_RELEASE = "v0.5.0"
LLAMA_FTYPE_MOSTLY_Q4_K_M = 15
_REPO = Path(__file__).resolve().parents[4]  # core/src/ftcore/export/ → the repository root, where node_modules is


class _QuantizeParams(ctypes.Structure):
    """struct llama_model_quantize_params (llama.h of LLAMA_CPP_RELEASE)."""

    _fields_ = [
        ("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
        ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
        ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
        ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p), ("prune_layers", ctypes.c_void_p),
        ("max_buf_size", ctypes.c_size_t),
    ]


_LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_GGML_LOG_LEVEL_WARN, _GGML_LOG_LEVEL_ERROR = 3, 4


@_LOG_CALLBACK
def _log_warnings_to_stderr(level: int, text: bytes, _user_data) -> None:
    """llama.cpp logs every tensor it quantizes; only its warnings and errors reach stderr."""
    if level in (_GGML_LOG_LEVEL_WARN, _GGML_LOG_LEVEL_ERROR):
        sys.stderr.write(text.decode(errors="replace"))


def find_libllama() -> tuple[Path | None, str]:
    """(the libllama to use, or None; why not, when None). FTCORE_LIBLLAMA names one explicitly."""
    if os.environ.get("FTCORE_LIBLLAMA"):
        candidates = [Path(os.environ["FTCORE_LIBLLAMA"])]
        where = f"FTCORE_LIBLLAMA={candidates[0]}"
    else:
        package = f"{_npm_platform()}@*/node_modules/@node-llama-cpp/{_npm_platform()}"
        candidates = sorted(_REPO.glob(f"node_modules/.pnpm/@node-llama-cpp+{package}/bins/*/libllama*"))
        where = f"{_REPO}/node_modules (the npm package @node-llama-cpp/{_npm_platform()}; run pnpm install)"
    for lib in candidates:
        if not lib.is_file():
            continue
        metadata = lib.parent / "_nlcBuildMetadata.json"
        release = json.loads(metadata.read_text())["buildOptions"]["llamaCpp"]["release"] if metadata.is_file() \
            else None
        if release == LLAMA_CPP_RELEASE:
            return lib, ""
        return None, (f"{lib} is llama.cpp release {release}, not {LLAMA_CPP_RELEASE} whose quantize parameters "
                      "this core knows")
    return None, f"no prebuilt libllama found in {where}"


def _npm_platform() -> str:
    system = {"Linux": "linux", "Darwin": "mac", "Windows": "win"}.get(platform.system(), platform.system().lower())
    machine = {"x86_64": "x64", "AMD64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(),
                                                                                            platform.machine())
    return f"{system}-{machine}"


def quantize_q4_k_m(lib_path: Path, source: Path, out: Path) -> None:
    """llama.cpp's Q4_K_M (as llama-quantize writes it, without an importance matrix) from an f16/f32 GGUF."""
    lib = ctypes.CDLL(str(lib_path))
    lib.llama_log_set.argtypes = [_LOG_CALLBACK, ctypes.c_void_p]
    lib.llama_log_set(_log_warnings_to_stderr, None)
    lib.llama_model_quantize_default_params.restype = _QuantizeParams
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_QuantizeParams)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    params = lib.llama_model_quantize_default_params()
    params.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M
    if lib.llama_model_quantize(str(source).encode(), str(out).encode(), ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp could not quantize {source} to Q4_K_M (its log is on stderr)")
