"""`python -m ftcore tinker-session`: a Tinker training session behind JSON lines, every op answered by id."""
import json
import os
import subprocess
import sys

import pytest
from peft import PeftConfig

from ftcore import events

from helpers import CORE

pytestmark = pytest.mark.slow

DATUM = {"model_input": [5, 6, 7, 8], "loss_fn_inputs": {"target_tokens": [6, 7, 8, 9], "weights": [0, 1, 1, 1]}}


class TinkerSession:
    def __init__(self, *flags: str, env: dict | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "ftcore", "tinker-session", "--device", "cpu", *flags],
                                     cwd=CORE, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)

    def next_answer(self) -> dict:
        """The next event other than a log line; the core's own events are parsed strictly."""
        while True:
            line = self.proc.stdout.readline()
            assert line, "tinker-session exited"
            data = json.loads(line)
            if data["event"] == "tinker_result":
                assert set(data) == {"id", "op", "result", "elapsed_seconds", "event"}
                return data
            if data["event"] != "log":
                return events.parse_event_line(line).__dict__

    def ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self.next_answer()


def test_every_op_round_trips_and_a_bad_request_is_answered_with_an_error(tiny_model, tmp_path):
    # As a worker starts a core: exiting with its parent (whose watch must leave stdin to the session).
    session = TinkerSession("--base_model", tiny_model, "--rank", "4", "--seed", "0", env={"FTCORE_EXIT_WITH_PARENT": "1"})
    try:
        assert session.next_answer()["event"] == "ready"
        info = session.ask({"id": "i", "op": "info"})
        assert (info["id"], info["result"]["rank"], info["result"]["step"]) == ("i", 4, 0)

        fb = session.ask({"id": "fb", "op": "forward_backward", "data": [DATUM, DATUM], "loss_fn": "cross_entropy"})
        logprobs = fb["result"]["loss_fn_outputs"][0]["logprobs"]
        assert len(fb["result"]["loss_fn_outputs"]) == 2 and len(logprobs) == 4
        assert fb["result"]["metrics"]["loss:sum"] == pytest.approx(-2 * sum(logprobs[1:]), rel=1e-5)

        step = session.ask({"id": "o", "op": "optim_step", "adam_params": {"learning_rate": 0.01}})
        assert step["result"]["metrics"]["learning_rate:mean"] == 0.01

        sampled = session.ask({"id": "s", "op": "sample", "prompt": [5, 6, 7], "num_samples": 2,
                               "sampling_params": {"max_tokens": 3, "temperature": 0, "stop": []},
                               "prompt_logprobs": True})
        sequences = sampled["result"]["sequences"]
        assert [len(s["tokens"]) for s in sequences] == [3, 3] and sequences[0]["stop_reason"] == "length"
        assert sampled["result"]["prompt_logprobs"][0] is None and len(sampled["result"]["prompt_logprobs"]) == 3

        state, sampler = str(tmp_path / "state"), str(tmp_path / "sampler")
        assert session.ask({"id": "ss", "op": "save_state", "path": state})["result"] == {"path": state}
        loaded = session.ask({"id": "ls", "op": "load_state", "path": state, "optimizer": True})
        assert loaded["result"] == {"path": state, "step": 1}
        assert session.ask({"id": "sw", "op": "save_weights_for_sampler", "path": sampler})["result"]["path"] == sampler
        assert PeftConfig.from_pretrained(sampler).r == 4
        # A sampling client of those weights: still theirs after another step.
        greedy = {"id": "sa", "op": "sample", "prompt": [5, 6, 7], "weights": sampler,
                  "sampling_params": {"max_tokens": 3, "temperature": 0, "stop": []}}
        before = session.ask(greedy)["result"]["sequences"][0]
        session.ask({"id": "fb2", "op": "forward_backward", "data": [DATUM], "loss_fn": "cross_entropy"})
        session.ask({"id": "o2", "op": "optim_step", "adam_params": {"learning_rate": 0.01}})
        after = session.ask(greedy)["result"]["sequences"][0]
        assert after["tokens"] == before["tokens"]
        assert after["logprobs"] == pytest.approx(before["logprobs"], abs=1e-5)
        never = session.ask({**greedy, "id": "sn", "weights": str(tmp_path / "never")})
        assert (never["event"], never["id"], never["field"]) == ("error", "sn", "weights")

        bad_loss = session.ask({"id": "b", "op": "forward_backward", "data": [DATUM], "loss_fn": "gspo"})
        assert (bad_loss["event"], bad_loss["id"], bad_loss["code"], bad_loss["field"]) == \
               ("error", "b", "validation", "loss_fn")
        assert "supported: cross_entropy, importance_sampling, ppo, cispo, dro" in bad_loss["message"]
        unknown = session.ask({"id": "u", "op": "train_harder"})
        assert (unknown["code"], unknown["id"]) == ("validation", "u") and "valid: forward_backward" in unknown["message"]
        assert session.ask({"id": "i2", "op": "info"})["result"]["step"] == 2  # the session went on
    finally:
        session.proc.stdin.close()
        assert session.proc.wait(timeout=60) == 0

