"""``python -m ralph_context`` runs the CLI."""

from ralph_context.cli import main

main()
