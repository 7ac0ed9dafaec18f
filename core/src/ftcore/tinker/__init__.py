"""The ML engine under the Tinker-compatible API (#60): a training session that executes Tinker's primitives
(session.py), its losses (losses.py), sampling (sampling.py), and the `tinker-session` process (process.py)."""
