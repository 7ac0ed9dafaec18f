"""sweep: one step of a sweep's search, on an Optuna study kept in storage (#63). The study lives in a journal file
(embedded: under DATA_DIR) or in the deployment's PostgreSQL (scaled out: the URL in FTCORE_SWEEP_STORAGE, never in a
spec file, since it holds a password); each call opens it, does one thing and exits, so a restart of whatever asks
loses nothing and any process may ask next.

- ask: the next trial's settings (`{"trial": n, "params": {...}}`), or `{"trial": null}` once a grid has none left.
- report: a trial's objective at an evaluation step; answers whether the pruner would stop it (`{"prune": bool}`).
- tell: a trial's end: complete with its objective, pruned, or failed.
- trials: every trial (number, state, params, value, steps reported) and the best completed one.
- delete: the study, once its sweep ended (what it told is kept by whoever asked).

The sampler is made anew for each ask, seeded with the sweep's seed plus the number of trials asked so far: the same
seed and the same history (the trials asked and what was told of them) propose the same next trial, whichever process
asks and however often it restarted. Optuna does the searching (grid, random, TPE) and the pruning (median,
successive halving); this module only maps the sweep's request onto it.
"""
from __future__ import annotations

import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import events
from ..errors import SpecError

STORAGE_ENV = "FTCORE_SWEEP_STORAGE"


@dataclass
class Options:
    """One step of a sweep's search (ask, report, tell, trials) on its Optuna study; the answer as JSON in output_file."""

    op: Literal["ask", "report", "tell", "trials", "delete"] = field(metadata={"help": "what to do"})
    study: str = field(metadata={"help": "the study's name (the sweep's id)"})
    output_file: str = field(metadata={"help": "where the answer goes (JSON)"})
    journal_file: str | None = field(default=None, metadata={
        "help": "the study's journal file (embedded); none: the database URL in FTCORE_SWEEP_STORAGE"})
    space: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "name → {type: float|int|choice, low, high, log, choices}: what ask proposes"})
    direction: Literal["minimize", "maximize"] = field(default="minimize", metadata={"help": "of the objective"})
    sampler: Literal["grid", "random", "tpe"] = field(default="tpe", metadata={"help": "how ask proposes"})
    startup_trials: int = field(default=4, metadata={
        "help": "tpe: random trials before it models the results; median pruner: completed trials before it prunes"})
    pruner: Literal["none", "median", "successive_halving"] = field(default="median", metadata={
        "help": "what report consults"})
    seed: int = field(default=0, metadata={"help": "the sweep's seed"})
    trial: int | None = field(default=None, metadata={"help": "report, tell: the trial's number"})
    step: int | None = field(default=None, metadata={"help": "report: the training step evaluated"})
    value: float | None = field(default=None, metadata={"help": "report, tell (complete): the objective"})
    state: Literal["complete", "pruned", "failed"] = field(default="complete", metadata={"help": "tell: how it ended"})


def run(options: Options) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if options.op == "delete":
        Path(options.output_file).write_text(json.dumps({"deleted": _delete(options)}))
        return
    study = _open(options)
    answer = {"ask": _ask, "report": _report, "tell": _tell, "trials": _trials}[options.op](options, study)
    Path(options.output_file).write_text(json.dumps(answer))
    events.emit(events.Artifact(kind="sweep", path=options.output_file))


def distributions(space: dict[str, Any]) -> dict:
    """The search space as Optuna's distributions; a dimension that cannot be one is a SpecError naming it."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out = {}
    for name, spec in space.items():
        kind = spec.get("type")
        if kind == "choice":
            choices = spec.get("choices") or []
            if not choices:
                raise SpecError(f"space.{name}: a choice needs choices")
            out[name] = CategoricalDistribution(choices)
        elif kind in ("float", "int"):
            low, high, log = spec.get("low"), spec.get("high"), bool(spec.get("log", False))
            if low is None or high is None or not low <= high or (log and low <= 0):
                raise SpecError(f"space.{name}: a {kind} range needs low ≤ high{' and low > 0 on a log scale' if log else ''}")
            out[name] = (FloatDistribution(float(low), float(high), log=log) if kind == "float"
                         else IntDistribution(int(low), int(high), log=log))
        else:
            raise SpecError(f"space.{name}: type must be float, int or choice, not {kind!r}")
    if not out:
        raise SpecError("space names no parameter to search")
    return out


def _grid(space: dict[str, Any]) -> dict[str, list]:
    """Every value each parameter takes on a grid: its choices, or every integer of an int range."""
    grid = {}
    for name, spec in space.items():
        if spec.get("type") == "choice":
            grid[name] = list(spec["choices"])
        elif spec.get("type") == "int" and not spec.get("log"):
            grid[name] = list(range(int(spec["low"]), int(spec["high"]) + 1))
        else:
            raise SpecError(f"space.{name}: a grid needs choices or a linear int range; give it choices")
    return grid


def _sampler(options: Options, asked: int):
    import optuna

    seed = options.seed + asked
    if options.sampler in ("grid", "random"):  # a grid's points are enqueued (_ask); the sampler proposes nothing
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=options.startup_trials)


def _pruner(options: Options):
    import optuna

    if options.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=options.startup_trials, n_warmup_steps=0)
    if options.pruner == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    return optuna.pruners.NopPruner()


def _storage(options: Options):
    from optuna.storages import JournalStorage, RDBStorage
    from optuna.storages.journal import JournalFileBackend

    if options.journal_file:
        Path(options.journal_file).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(options.journal_file))
    url = os.environ.get(STORAGE_ENV)
    if not url:
        raise SpecError(f"no journal_file and no {STORAGE_ENV}: say where the study is kept")
    if url.startswith("postgres://") or url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]  # the driver this core locks
        # Optuna's tables go into the schema of their own the platform's migration 026 made, apart from the platform's.
        if "search_path" not in url:
            url += ("&" if "?" in url else "?") + "options=-csearch_path%3Doptuna"
    return RDBStorage(url)


def _open(options: Options):
    import optuna

    storage = _storage(options)
    # How many trials were asked so far seeds this ask's sampler; reading it needs the study, opened first without one.
    probe = optuna.load_study(study_name=options.study, storage=storage) if _exists(storage, options.study) else None
    asked = len(probe.get_trials(deepcopy=False)) if probe else 0
    return optuna.create_study(study_name=options.study, storage=storage, load_if_exists=True, direction=options.direction,
                               sampler=_sampler(options, asked), pruner=_pruner(options))


def _delete(options: Options) -> bool:
    import optuna

    if options.journal_file:
        journal = Path(options.journal_file)
        existed = journal.exists()
        journal.unlink(missing_ok=True)
        Path(f"{journal}.lock").unlink(missing_ok=True)
        return existed
    storage = _storage(options)
    if not _exists(storage, options.study):
        return False
    optuna.delete_study(study_name=options.study, storage=storage)
    return True


def _exists(storage, name: str) -> bool:
    return any(s.study_name == name for s in storage.get_all_studies())


def _ask(options: Options, study) -> dict:
    space = distributions(options.space)
    if options.sampler == "grid":
        # Optuna's GridSampler proposes a point again while the trial that took it runs (its docs say so: it reads
        # finished trials), and a sweep runs several at once: the next point not taken by any trial is enqueued
        # instead, in an order the seed shuffles.
        import random

        points = [dict(zip(_grid(options.space), values)) for values in itertools.product(*_grid(options.space).values())]
        random.Random(options.seed).shuffle(points)
        taken = [t.params for t in study.get_trials(deepcopy=False)]
        free = [p for p in points if p not in taken]
        if not free:
            return {"trial": None, "params": None}
        study.enqueue_trial(free[0])
    trial = study.ask(space)
    return {"trial": trial.number, "params": trial.params}


def _trial(options: Options, study):
    import optuna

    if options.trial is None:
        raise SpecError(f"{options.op} needs trial")
    try:
        trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, options.trial)
    except KeyError as err:
        raise SpecError(f"study {options.study} has no trial {options.trial}") from err
    return optuna.trial.Trial(study, trial_id)


def _finite(value: float | None, what: str) -> float:
    if value is None or not math.isfinite(value):
        raise SpecError(f"{what} needs a finite value, not {value}")
    return float(value)


def _report(options: Options, study) -> dict:
    if options.step is None:
        raise SpecError("report needs step")
    trial = _trial(options, study)
    trial.report(_finite(options.value, "report"), options.step)
    return {"prune": bool(trial.should_prune())}


def _tell(options: Options, study) -> dict:
    from optuna.trial import TrialState

    _trial(options, study)  # an unknown trial is a SpecError
    if options.state == "complete":
        study.tell(options.trial, _finite(options.value, "tell complete"))
    else:
        study.tell(options.trial, state=TrialState.PRUNED if options.state == "pruned" else TrialState.FAIL)
    return _trials(options, study)


def _trials(options: Options, study) -> dict:
    trials = [{"trial": t.number, "state": t.state.name.lower(), "params": t.params, "value": t.value,
               "steps": {str(step): value for step, value in sorted(t.intermediate_values.items())}}
              for t in study.get_trials(deepcopy=False)]
    done = [t for t in trials if t["state"] == "complete"]
    best = (min if options.direction == "minimize" else max)(done, key=lambda t: t["value"]) if done else None
    return {"trials": trials, "best": best}
