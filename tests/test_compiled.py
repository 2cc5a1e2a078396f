"""dynlib.compiled: numba's cache is dropped when any dynlib source changes."""
import shutil

import pytest

import dynlib.compiled as compiled


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A copy of dynlib's sources with a cached-looking kernel file, and a private home."""
    pkg = tmp_path / "dynlib"
    shutil.copytree(compiled._HERE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "algorithms" / "__pycache__").mkdir()
    monkeypatch.setattr(compiled, "_HERE", pkg)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    return pkg


def fake_kernel(pkg):
    f = pkg / "algorithms" / "__pycache__" / "aba.aba_kernel-1.py311.nbi"
    f.write_bytes(b"cached")
    return f


def test_unchanged_sources_keep_the_cache(package_copy):
    compiled.invalidate_stale_caches()  # first run: writes the stamp
    kernel = fake_kernel(package_copy)
    assert compiled.invalidate_stale_caches() is False
    assert kernel.exists()


def test_a_change_in_any_source_drops_the_cache(package_copy):
    compiled.invalidate_stale_caches()
    kernel = fake_kernel(package_copy)
    callee = package_copy / "spatial.py"
    callee.write_text(callee.read_text() + "\n# changed\n")
    assert compiled.invalidate_stale_caches() is True
    assert not kernel.exists()
    assert compiled.invalidate_stale_caches() is False  # the new stamp holds
