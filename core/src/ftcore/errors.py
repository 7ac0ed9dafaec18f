"""Errors the command line turns into `error` events (see cli.main)."""


class SpecError(ValueError):
    """The spec cannot work with this dataset/model/machine; the message says how to fix it."""


class Cancelled(RuntimeError):
    """SIGTERM arrived; the run stopped at a step boundary and saved a checkpoint."""


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; training stopped before saving the diverged weights."""
