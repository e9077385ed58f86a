"""lakeFS's local blockstore (``local://`` namespaces): one translation to paths, and a deleter
that keeps every safety rule (namespace, ``_lakefs/``, ``dummy``) on the ``local://`` form."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakewarden.blockstore import blockstore_root, local_path, to_file_uri
from lakewarden.deleters import deleter_for
from lakewarden.deleters.local_blockstore import LocalBlockstoreDeleter
from lakewarden.errors import BadInput


@pytest.fixture()
def blockstore(tmp_path: Path) -> Path:
    root = tmp_path / "lakefs-data"
    for relative in ("repo1/data/a", "repo1/data/b", "repo1/_lakefs/meta", "repo1/dummy", "repo2/data/a"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(b"x")
    return root


def test_paths_are_under_the_blockstore(blockstore: Path) -> None:
    assert blockstore_root("s3://b/p", None) is None
    root = blockstore_root("local://repo1", str(blockstore))
    assert root == blockstore.resolve()
    assert local_path("local://repo1/data/a", root) == root / "repo1" / "data" / "a"
    assert to_file_uri("local://repo1/data/a", root) == (root / "repo1" / "data" / "a").as_uri()


def test_missing_or_bad_blockstore_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="--local-blockstore"):
        blockstore_root("local://repo1", None)
    with pytest.raises(BadInput, match="not a directory"):
        blockstore_root("local://repo1", str(tmp_path / "nowhere"))


def test_deleter_deletes_only_inside_the_namespace(blockstore: Path) -> None:
    deleter = deleter_for("local://repo1", local_blockstore=str(blockstore))
    assert isinstance(deleter, LocalBlockstoreDeleter)
    uris = [
        "local://repo1/data/a",
        "local://repo1/data/gone",
        "local://repo1/_lakefs/meta",
        "local://repo1/dummy",
        "local://repo2/data/a",
        "local://repo1/data/../../repo2/data/a",
        "file:///etc/passwd",
    ]
    outcomes = deleter.delete_batch(uris)
    assert [o.uri for o in outcomes] == uris
    status = {o.uri: (o.status, o.reason) for o in outcomes}
    assert status["local://repo1/data/a"][0] == "deleted"
    assert status["local://repo1/data/gone"] == ("deleted", "already absent")
    for refused in uris[2:]:
        assert status[refused][0] == "failed" and status[refused][1].startswith("unsafe")
    assert not (blockstore / "repo1/data/a").exists()
    for kept in ("repo1/data/b", "repo1/_lakefs/meta", "repo1/dummy", "repo2/data/a"):
        assert (blockstore / kept).exists()


def test_deleter_without_blockstore_is_bad_input() -> None:
    with pytest.raises(BadInput, match="--local-blockstore"):
        deleter_for("local://repo1")
