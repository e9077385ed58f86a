"""Deleter factory and the local-filesystem backend, on real files."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from lakewarden.deleters import DeleteOutcome, deleter_for, register_backend
from lakewarden.deleters.base import Deleter
from lakewarden.deleters.local import LocalDeleter
from lakewarden.deleters.s3 import S3Deleter
from lakewarden.errors import BadInput


@pytest.fixture()
def namespace(tmp_path: Path) -> Path:
    ns = tmp_path / "ns"
    (ns / "data").mkdir(parents=True)
    (ns / "_lakefs").mkdir()
    return ns


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"payload")
    return path


def test_factory_picks_backend_by_scheme(namespace: Path) -> None:
    assert isinstance(deleter_for(namespace.as_uri()), LocalDeleter)
    assert isinstance(deleter_for(str(namespace)), LocalDeleter)
    for ns in ("s3://b/p", "s3a://b/p", "S3N://b/p/"):
        deleter = deleter_for(ns, endpoint_url="http://127.0.0.1:1")
        assert isinstance(deleter, S3Deleter) and deleter.bucket == "b"
    from lakewarden.deleters.azure import AzureDeleter
    from lakewarden.deleters.gcs import GcsDeleter

    assert isinstance(deleter_for("gs://b/p"), GcsDeleter)
    assert isinstance(deleter_for("https://acct.blob.core.windows.net/container/p"), AzureDeleter)
    assert isinstance(deleter_for("HTTP://ACCT.blob.core.windows.net/container/p"), AzureDeleter)
    with pytest.raises(BadInput, match="not an Azure Blob Storage URI"):
        deleter_for("https://example.com/container/p")
    with pytest.raises(BadInput, match="needs a container"):
        deleter_for("https://acct.blob.core.windows.net/")
    with pytest.raises(BadInput, match="no deleter for scheme 'wasb'"):
        deleter_for("wasb://b/p")
    with pytest.raises(BadInput, match="storage_namespace"):
        deleter_for("relative/path")


def test_new_backends_slot_in_by_scheme() -> None:
    class Recorder(Deleter):
        def delete_batch(self, uris):  # type: ignore[no-untyped-def]
            safe, unsafe = self.split_unsafe(uris)
            return [unsafe.get(uri) or DeleteOutcome.deleted(uri) for uri in uris]

    register_backend("memtest", Recorder)
    deleter = deleter_for("memtest://container/ns")
    outcomes = deleter.delete_batch(["memtest://container/ns/a", "memtest://container/ns/_lakefs/b"])
    assert [o.status for o in outcomes] == ["deleted", "failed"]


def test_local_deletes_real_files(namespace: Path) -> None:
    files = [_touch(namespace / "data" / f"obj-{i}") for i in range(5)]
    deleter = deleter_for(namespace.as_uri())
    outcomes = deleter.delete_batch([f.as_uri() for f in files])
    assert [o.status for o in outcomes] == ["deleted"] * 5
    assert not any(f.exists() for f in files)
    assert (namespace / "data").is_dir(), "directories are left in place"


def test_local_missing_file_counts_as_deleted_and_rerun_is_idempotent(namespace: Path) -> None:
    f = _touch(namespace / "data" / "x")
    deleter = LocalDeleter(namespace.as_uri())
    uris = [f.as_uri(), (namespace / "data" / "never-existed").as_uri(), (namespace / "no" / "dir" / "y").as_uri()]
    first = deleter.delete_batch(uris)
    second = deleter.delete_batch(uris)
    assert [o.status for o in first] == ["deleted"] * 3
    assert [o.status for o in second] == ["deleted"] * 3
    assert "already absent" in second[0].reason


def test_local_refuses_unsafe_uris_and_keeps_the_files(namespace: Path, tmp_path: Path) -> None:
    outside = _touch(tmp_path / "outside.txt")
    meta = _touch(namespace / "_lakefs" / "meta")
    uris = [outside.as_uri(), meta.as_uri(), namespace.as_uri(), f"{namespace.as_uri()}/data/../_lakefs/meta"]
    outcomes = LocalDeleter(namespace.as_uri()).delete_batch(uris)
    assert [o.status for o in outcomes] == ["failed"] * 4
    assert all(o.reason.startswith("unsafe:") for o in outcomes)
    assert outside.exists() and meta.exists()


def test_local_never_follows_a_symlinked_directory_out_of_the_namespace(namespace: Path, tmp_path: Path) -> None:
    victim_dir = tmp_path / "victim"
    victim = _touch(victim_dir / "precious")
    (namespace / "data" / "link").symlink_to(victim_dir, target_is_directory=True)
    meta = _touch(namespace / "_lakefs" / "meta")
    (namespace / "data" / "meta-link").symlink_to(namespace / "_lakefs", target_is_directory=True)
    deleter = LocalDeleter(namespace.as_uri())
    outcomes = deleter.delete_batch(
        [
            (namespace / "data" / "link" / "precious").as_uri(),
            (namespace / "data" / "meta-link" / "meta").as_uri(),
            f"{namespace.as_uri()}/data/link/../victim/precious",  # lexically inside, really the victim
        ]
    )
    assert [o.status for o in outcomes] == ["failed"] * 3, outcomes
    assert "symlink" in outcomes[0].reason and "_lakefs" in outcomes[1].reason
    assert victim.exists() and meta.exists()


def test_local_unlinks_a_symlink_itself_not_its_target(namespace: Path, tmp_path: Path) -> None:
    target = _touch(tmp_path / "target")
    link = namespace / "data" / "file-link"
    link.symlink_to(target)
    [outcome] = LocalDeleter(namespace.as_uri()).delete_batch([link.as_uri()])
    assert outcome.status == "deleted"
    assert not os.path.lexists(link) and target.exists()


def test_local_does_not_remove_directories(namespace: Path) -> None:
    _touch(namespace / "data" / "sub" / "f")
    [outcome] = LocalDeleter(namespace.as_uri()).delete_batch([(namespace / "data" / "sub").as_uri()])
    assert outcome.status == "failed" and "directory" in outcome.reason
    assert (namespace / "data" / "sub" / "f").exists()


def test_batch_limit_is_enforced(namespace: Path) -> None:
    deleter = LocalDeleter(namespace.as_uri(), max_batch=2)
    with pytest.raises(ValueError, match="max_batch"):
        deleter.delete_batch([(namespace / "data" / str(i)).as_uri() for i in range(3)])


def test_s3_deleter_pickles_without_its_client() -> None:
    deleter = S3Deleter("s3://b/p", endpoint_url="http://127.0.0.1:1", region_name="us-east-1")
    _ = deleter.client
    clone = pickle.loads(pickle.dumps(deleter))
    assert clone._client is None and clone.bucket == "b"
    with pytest.raises(ValueError):
        S3Deleter("s3://b/p", max_batch=1001)
