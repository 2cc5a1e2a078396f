"""dynlib.files.output.atomic_output: a file appears whole, or not at all, and never clobbers on failure."""
import os

import pytest

from dynlib.errors import InputError
from dynlib.files.output import atomic_output


def test_success_renames_the_temporary_file_onto_the_target(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with atomic_output(target) as tmp:
        assert tmp.parent == tmp_path and tmp != target
        assert tmp.name.startswith(".out.csv.") and tmp.suffix == ".csv"  # hidden; the suffix kept for writers
        assert tmp.exists() and target.read_text() == "old\n"  # the target is untouched until the end
        tmp.write_text("new\n")
    assert target.read_text() == "new\n"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_failing_writer_leaves_no_file(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        with atomic_output(target) as tmp:
            tmp.write_text("time\n0\n")
            raise RuntimeError("writer died")
    assert os.listdir(tmp_path) == []


def test_failing_writer_does_not_clobber_and_os_errors_name_the_file(tmp_path):
    target = tmp_path / "out.png"
    target.write_bytes(b"precious")
    with pytest.raises(InputError, match=r"out.png: cannot write: No space left"):
        with atomic_output(target) as tmp:
            tmp.write_bytes(b"half")
            raise OSError(28, "No space left on device")
    assert target.read_bytes() == b"precious"
    assert os.listdir(tmp_path) == ["out.png"]


def test_a_broken_pipe_passes_through(tmp_path):
    """A reader that went away is not an input error: it goes up as it is (the CLI handles it)."""
    with pytest.raises(BrokenPipeError):
        with atomic_output(tmp_path / "out.csv"):
            raise BrokenPipeError
    assert os.listdir(tmp_path) == []


def test_two_outputs_to_one_target_do_not_share_a_temporary_file(tmp_path):
    target = tmp_path / "out.csv"
    with atomic_output(target) as a, atomic_output(target) as b:
        assert a != b
        a.write_text("a")
        b.write_text("b")
    assert target.read_text() == "a"  # the outer block ends last
    assert os.listdir(tmp_path) == ["out.csv"]


def test_temporary_file_has_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_output(tmp_path / "fig.png") as tmp:
            tmp.write_bytes(b"png")
    finally:
        os.umask(old)
    assert (tmp_path / "fig.png").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("name, message", [
    ("nope/out.csv", "does not exist"),
    (".", "is a folder"),
    ("sub", "is a folder"),
])
def test_bad_targets_are_input_errors_naming_the_path(tmp_path, name, message):
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError, match=message) as info:
        with atomic_output(tmp_path / name):
            pass  # pragma: no cover - never reached
    assert str(tmp_path / name) in str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["sub"]


def test_a_folder_that_cannot_be_written_is_an_input_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(InputError, match="cannot write in"):
            with atomic_output(folder / "out.csv"):
                pass  # pragma: no cover - never reached
    finally:
        folder.chmod(0o700)


def test_memory_shortfall_says_how_much_more_than_the_machine_has(monkeypatch):
    """The one check of a table too large to make (a long run, a resampling rate, an excitation)."""
    from dynlib.files import output

    assert output.memory_shortfall(8 * 1000) is None
    over = output.memory_shortfall(2e21)
    assert over.startswith("2e+12 GB, more than this machine's ") and over.endswith(" GB")
    monkeypatch.setattr(output.os, "sysconf", lambda name: 4096 if name == "SC_PAGE_SIZE" else 1000)
    assert output.memory_shortfall(4096 * 1000) is None
    assert output.memory_shortfall(4096 * 1001) == "0.0041 GB, more than this machine's 0.0041 GB"

    def unknown(name):
        raise ValueError(name)

    monkeypatch.setattr(output.os, "sysconf", unknown)
    assert output.memory_shortfall(2e21) is None  # a system that does not say: no check
