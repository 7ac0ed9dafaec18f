"""preflight: what a training run will do, told before it runs: the command and its report (command.py), the run's
steps and tokens (steps.py), the model's memory without its weights (memory.py), the warnings each with the change that
fixes it (warnings.py), and those that need the model's weights (sampled.py)."""
