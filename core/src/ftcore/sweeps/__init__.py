"""Sweeps (#63): a search over a training request's hyperparameters, its study kept by Optuna."""
