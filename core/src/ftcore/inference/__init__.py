"""inference: batch generation with the chat template applied, its compiled engine, and constrained decoding."""
