"""import-model from a local folder, and a clear error when the hub is out of reach."""
import pytest
from helpers import captured_events

from ftcore.errors import SpecError
from ftcore.import_model import Options, run


def test_a_local_folder_is_imported_with_its_tokenizer(tiny_model, tmp_path):
    from transformers import AutoTokenizer

    with captured_events() as cap:
        run(Options(source=tiny_model, output_dir=str(tmp_path / "m")))
    assert [a.path for a in cap.of("artifact")] == [str(tmp_path / "m")]
    assert AutoTokenizer.from_pretrained(tmp_path / "m").chat_template


def test_an_unreachable_hub_fails_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "2")
    with pytest.raises(SpecError, match="set HF_ENDPOINT"):
        run(Options(source="owner/missing-model", output_dir=str(tmp_path / "m"), provider="hub"))
