"""Evaluation tools from the prompt-prix spec: drift, variants and semantic trajectories on
the engine's local model (and, with the inference actor, completions, ReAct steps, judging)."""
