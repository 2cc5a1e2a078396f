"""Fuzzing the readers (issue #9): mutated URDF, trajectory and scenario text never crash dynlib.

Hypothesis mutates valid files (delete, duplicate or replace a few characters,
truncate, swap a number for garbage) and feeds them to the library's entry
points in-process: `dynlib.load`, `dynlib.files.trajectory.read_trajectory` and
`dynlib.runs.scenario.load_scenario` may only raise the `DynError` family, and the
command line (`cli.main.dyn` through click's CliRunner) exits 0, 1 or 2, never
prints a traceback without -v, and leaves no output file when it fails on input.
Derandomized, so CI sees the same examples every run.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis import given

import dynlib
from dynlib.errors import DynError
from dynlib.runs.scenario import load_scenario
from dynlib.files.trajectory import check_increasing_time, read_trajectory

from tests.test_bad_inputs import FLOAT_TRAJ, ROBOT, SCENARIO, TRAJ, parquet_bytes

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
FUZZ_CLI = settings(FUZZ, max_examples=80)

GARBAGE = ["nan", "inf", "-inf", "1e999", "-1e400", "abc", "", "-", "1.2.3", "0x10", "１", "1,5", "--1",
           "1e", " ", "\x00", "&amp;", "<", "\"", "'", "]", "{", ":", "*", "9" * 40, "-0", "0", "-1", "1e-300"]
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


@st.composite
def mutated(draw, text: str):
    """`text` with 1–4 mutations: delete, duplicate or replace a slice, truncate, or a number made garbage."""
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        op = draw(st.sampled_from(["delete", "duplicate", "replace", "truncate"] + ["number"] * 4))
        if op == "number":
            spans = [m.span() for m in NUMBER.finditer(text)]
            if spans:
                a, b = draw(st.sampled_from(spans))
                text = text[:a] + draw(st.sampled_from(GARBAGE)) + text[b:]
            continue
        if n == 0:
            break
        i = draw(st.integers(0, n - 1))
        k = draw(st.integers(1, 4))
        if op == "delete":
            text = text[:i] + text[i + k:]
        elif op == "duplicate":
            text = text[:i + k] + text[i:i + k] + text[i + k:]
        elif op == "replace":
            text = text[:i] + draw(st.text(st.characters(codec="utf-8"), min_size=1, max_size=k)) + text[i + k:]
        else:
            text = text[:i]
    return text


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory(prefix="dyn-fuzz-") as d:
        d = Path(d)
        (d / "r.urdf").write_text(ROBOT)
        yield d


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


def only_dyn_errors(call):
    try:
        return call()
    except DynError as exc:
        assert "\n" not in str(exc), str(exc)
        return None


# ---- the library -----------------------------------------------------------------

@FUZZ
@given(text=mutated(ROBOT))
def test_mutated_urdf_loads_or_raises_a_dyn_error(folder, text):
    path = write(folder, "m.urdf", text)

    def load():
        model = dynlib.load(path)
        model.summary()
        dynlib.load(path, floating_base=True)
        return model

    only_dyn_errors(load)


@FUZZ
@given(text=mutated(TRAJ))
def test_mutated_csv_reads_or_raises_a_dyn_error(folder, text):
    path = write(folder, "m.csv", text)

    def read():
        traj = read_trajectory(path, required=["q.j1"])
        check_increasing_time(traj)
        return traj

    only_dyn_errors(read)


@FUZZ
@given(data=st.data())
def test_mutated_parquet_reads_or_raises_a_dyn_error(folder, data):
    raw = parquet_bytes()
    i = data.draw(st.integers(0, len(raw) - 1))
    op = data.draw(st.sampled_from(["flip", "truncate", "delete"]))
    if op == "flip":
        raw = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1:]
    elif op == "truncate":
        raw = raw[:i]
    else:
        raw = raw[:i] + raw[i + data.draw(st.integers(1, 16)):]
    path = folder / "m.parquet"
    path.write_bytes(raw)
    only_dyn_errors(lambda: read_trajectory(path))


@FUZZ
@given(text=mutated(SCENARIO))
def test_mutated_scenario_loads_or_raises_a_dyn_error(folder, text):
    path = write(folder, "m.yaml", text)
    only_dyn_errors(lambda: load_scenario(path))


# ---- the command line ----------------------------------------------------------------

def run_cli(folder: Path, args):
    from cli.main import dyn

    out = folder / "out.csv"
    out.unlink(missing_ok=True)
    result = CliRunner().invoke(dyn, args, catch_exceptions=True)
    text = result.output + (getattr(result, "stderr", "") if result.stderr_bytes is not None else "")
    assert isinstance(result.exception, (SystemExit, type(None))), repr(result.exception)
    assert "Traceback" not in text
    assert result.exit_code in (0, 1, 2), text
    if result.exit_code == 2:
        assert not out.exists(), "a failing command left its output behind"
        assert "dyn: error: " in text
    return result


@FUZZ_CLI
@given(text=mutated(ROBOT))
def test_cli_info_on_a_mutated_urdf(folder, text):
    path = write(folder, "c.urdf", text)
    run_cli(folder, ["info", str(path)])


@FUZZ_CLI
@given(text=mutated(ROBOT))
def test_cli_simulate_on_a_mutated_urdf(folder, text):
    path = write(folder, "s.urdf", text)
    run_cli(folder, ["simulate", str(path), "--steps", "3", "--columns", "q,energy", "-o", str(folder / "out.csv")])


@FUZZ_CLI
@given(text=mutated(TRAJ))
def test_cli_inverse_on_a_mutated_trajectory(folder, text):
    path = write(folder, "c.csv", text)
    run_cli(folder, ["inverse", str(folder / "r.urdf"), str(path), "-o", str(folder / "out.csv")])


@FUZZ_CLI
@given(text=mutated(SCENARIO))
def test_cli_simulate_on_a_mutated_scenario(folder, text):
    path = write(folder, "c.yaml", text.replace("steps: 5", "duration: 0.005"))
    run_cli(folder, ["simulate", str(path), "-o", str(folder / "out.csv")])


@FUZZ_CLI
@given(q0=st.text(st.sampled_from("0123456789.,-=e jnaiq\u00e9"), max_size=12),
       dt=st.sampled_from(["1e-3", "0", "-1", "nan", "inf", "x", "1e-2"]),
       integrator=st.sampled_from(["rk4", "euler", "semi-implicit", "rk5", ""]))
def test_cli_simulate_options(folder, q0, dt, integrator):
    run_cli(folder, ["simulate", str(folder / "r.urdf"), "--steps", "3", "--dt", dt, "--integrator", integrator,
                     "--q0", q0, "-o", str(folder / "out.csv")])


@FUZZ_CLI
@given(contact=st.text(st.sampled_from("tool@:0123.,-ab"), max_size=10),
       guess=st.text(st.sampled_from("tool=0123456789.,-einf"), max_size=16),
       traj=mutated(FLOAT_TRAJ))
def test_cli_contact_id_options_and_file(folder, contact, guess, traj):
    path = write(folder, "f.csv", traj)
    args = ["contact-id", str(folder / "r.urdf"), str(path), "--contact", contact, "-o", str(folder / "out.csv")]
    run_cli(folder, args + (["--guess", guess] if guess else []))
