"""Prompt learning: which prompts worked, how well, and what the better ones do differently."""
