"""``import lancedb`` without building a REST client nobody here calls.

LanceDB imports Lance's namespace client eagerly, and that client's package
(``lance_namespace_urllib3_client``) imports its whole REST API on import: ~200 pydantic
models and 366 ``validate_call`` methods, whose schemas pydantic builds then and there. On
these machines that is 1.7 s of the 2.5-3.0 s ``import lancedb`` takes, paid by every
process that opens a store (each CLI command, each Ralph v2 hook call with its own
engine, each server start), for a REST namespace client this project never uses. Lance
made the same import lazy upstream (lance#9273); lancedb 0.40 and lance-namespace 0.13, the
newest, still import it eagerly.

While that one package is imported, pydantic is asked to build nothing before it is needed:
its models are declared with ``defer_build`` (pydantic's own option: the schema is built at
a model's first use) and its methods' ``validate_call`` wrappers are built at their first
call. What is validated, and how, is pydantic's and unchanged; only when the schemas are
built moves. Nothing else in the process is touched: pydantic's names are put back as soon
as that package is imported, and a Lance that stops importing it makes this a no-op.
"""

from __future__ import annotations

import functools
import sys
from importlib.machinery import ModuleSpec, PathFinder

# Not typing.TYPE_CHECKING: every process imports this module first (see install), and
# importing typing costs an agent's hook process ~10 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

__all__ = ["install"]

PACKAGE = "lance_namespace_urllib3_client"


def install() -> None:
    """Defer the schemas of :data:`PACKAGE` when it is imported (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


class _Finder:
    """Finds :data:`PACKAGE` where Python would, and imports it with :class:`_Deferring`."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name != PACKAGE:
            return None
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Deferring(spec.loader)  # type: ignore[assignment]
        return spec


class _Deferring:
    """The package's own loader, run with pydantic's ``validate_call`` and ``ConfigDict``
    swapped for deferring ones (its modules bind them as they import: ``from pydantic
    import ConfigDict, validate_call``)."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        import pydantic

        validate_call, config_dict = pydantic.validate_call, pydantic.ConfigDict
        pydantic.validate_call = _built_at_first_call(validate_call)
        pydantic.ConfigDict = _deferred_build(config_dict)  # type: ignore[misc,assignment]
        try:
            self._loader.exec_module(module)
        finally:
            pydantic.validate_call = validate_call
            pydantic.ConfigDict = config_dict  # type: ignore[misc]


def _built_at_first_call(validate_call: Callable[..., Any]) -> Callable[..., Any]:
    """``validate_call`` (bare, or called with its options) whose wrapper is built when the
    decorated function is first called."""

    def decorate(function: Callable[..., Any], options: dict[str, Any]) -> Callable[..., Any]:
        built: Callable[..., Any] | None = None

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal built
            if built is None:
                built = validate_call(function, **options)
            return built(*args, **kwargs)

        return call

    def deferring(function: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        if function is None:
            return lambda later: decorate(later, options)
        return decorate(function, options)

    return deferring


def _deferred_build(config_dict: Callable[..., Any]) -> Callable[..., Any]:
    """``ConfigDict`` with ``defer_build`` on unless the model says otherwise."""

    def deferring(**settings: Any) -> Any:
        settings.setdefault("defer_build", True)
        return config_dict(**settings)

    return deferring
