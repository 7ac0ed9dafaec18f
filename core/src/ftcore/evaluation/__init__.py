"""evaluation: metrics over prediction/reference pairs, OpenAI-style graders, and the sandbox a python grader runs in."""
