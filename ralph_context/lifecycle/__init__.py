"""Context lifecycle: what ages, what is summarized, archived and pruned, and how."""
