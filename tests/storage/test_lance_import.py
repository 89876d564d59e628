"""LanceDB's namespace client is imported with its schemas deferred, and still validates
what it is given exactly as pydantic does: each check in a fresh interpreter, the way a
command or a hook process imports it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_namespace_client_defers_its_schemas_and_pydantic_is_put_back() -> None:
    out = _run(
        """
        import pydantic
        validate_call, config_dict = pydantic.validate_call, pydantic.ConfigDict
        import ralph_context, lancedb
        from lance_namespace_urllib3_client.models.describe_table_request import (
            DescribeTableRequest,
        )

        class Ours(pydantic.BaseModel):
            name: str

        print(
            DescribeTableRequest.__pydantic_complete__,
            pydantic.validate_call is validate_call,
            pydantic.ConfigDict is config_dict,
            Ours.__pydantic_complete__,
        )
        """
    )
    # Deferred there, and only there: pydantic's names are its own again, a model defined
    # afterwards is built at once.
    assert out == "False True True True"


def test_deferred_models_and_methods_still_validate() -> None:
    out = _run(
        """
        import ralph_context, lancedb
        import pydantic
        from lance_namespace_urllib3_client.api.table_api import TableApi
        from lance_namespace_urllib3_client.models.describe_table_request import (
            DescribeTableRequest,
        )

        request = DescribeTableRequest(id=["a", "b"], version=3)
        assert request.id == ["a", "b"] and request.version == 3
        assert DescribeTableRequest.__pydantic_complete__
        for bad in ({"version": -1}, {"id": "not a list"}, {"with_table_uri": "yes"}):
            try:
                DescribeTableRequest(**bad)
            except pydantic.ValidationError:
                continue
            raise AssertionError(f"accepted {bad}")
        # A method's arguments are checked before any request is made.
        try:
            TableApi().describe_table(id=42, describe_table_request=request)
        except pydantic.ValidationError as exc:
            print(exc.errors()[0]["loc"][-1])
        """
    )
    assert out == "id"


def test_a_store_opens_and_searches_after_the_deferred_import(tmp_path: object) -> None:
    out = _run(
        f"""
        import ralph_context, lancedb
        db = lancedb.connect({str(tmp_path)!r})
        table = db.create_table("t", data=[{{"vector": [1.0, 0.0], "text": "a"}}])
        print(table.search([1.0, 0.0]).limit(1).to_list()[0]["text"])
        """
    )
    assert out == "a"
