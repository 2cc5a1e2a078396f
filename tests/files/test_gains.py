"""Gain files (dynlib.files.gains): the state-feedback gain CSV written and read back exactly, in the
names dyn linearize writes, and every bad file one error naming the file, its line and column."""
import numpy as np
import pytest

import dynlib
from dynlib.errors import InputError
from dynlib.files.gains import read_gain, state_names, write_gain
from helpers import sample

STATE = ("q.joint1", "q.joint2", "qd.joint1", "qd.joint2")


def test_state_names_are_the_tangent_coordinates_then_the_velocities():
    assert state_names(("joint1", "joint2")) == STATE
    quad = sample("quadruped", True)
    names = state_names(quad.v_names)
    assert len(names) == 2 * quad.nv and names[0] == "q.root.vx" and names[quad.nv] == "qd.root.vx"


def test_a_gain_is_written_and_read_back_exactly(tmp_path):
    model = sample("double_pendulum")
    K = np.array([[-12.5, 0.1 + 0.2, 1e-300, -3.0]])
    path = tmp_path / "gain.csv"
    dynlib.write_gain(path, K, ["joint2"], STATE)
    assert path.read_text().splitlines()[0] == "input," + ",".join(STATE)
    inputs, back = dynlib.read_gain(path, model)
    assert inputs == ("joint2",) and back.shape == (1, 4)
    assert np.array_equal(back, K)


def test_columns_in_another_order_are_put_in_the_state_s_order(tmp_path):
    model = sample("double_pendulum")
    path = tmp_path / "gain.csv"
    path.write_text("input,qd.joint2,q.joint1,qd.joint1,q.joint2\njoint1,4,1,3,2\njoint2,8,5,7,6\n")
    inputs, K = read_gain(path, model)
    assert inputs == ("joint1", "joint2")
    assert np.array_equal(K, [[1, 2, 3, 4], [5, 6, 7, 8]])


@pytest.mark.parametrize("text, where", [
    ("inputs,q.joint1,q.joint2,qd.joint1,qd.joint2\n", ":1: the first column is 'inputs', expected 'input'"),
    ("input,q.joint1,q.joint3,qd.joint1,qd.joint2\n", ":1: column 'q.joint3' is not a state of robot"),
    ("input,q.joint1,qd.joint1,qd.joint2\n", ":1: no column for the state q.joint2"),
    ("input,q.joint1,q.joint1,qd.joint1,qd.joint2\n", ":1: column 'q.joint1' appears twice"),
    ("input,q.joint1,q.joint2,qd.joint1,qd.joint2\njoint3,1,2,3,4\n",
     ":2: column 'input': input 'joint3': robot 'double_pendulum' has no coordinate 'joint3'; did you mean"),
    ("input,q.joint1,q.joint2,qd.joint1,qd.joint2\njoint1,1,2,3,4\njoint1,1,2,3,4\n",
     ":3: column 'input': input 'joint1' has a second row"),
    ("input,q.joint1,q.joint2,qd.joint1,qd.joint2\njoint1,1,nan,3,4\n",
     ":2: column 'q.joint2': 'nan' is not a finite number"),
    ("input,q.joint1,q.joint2,qd.joint1,qd.joint2\njoint1,1,2,x,4\n", ":2: column 'qd.joint1': 'x' is not a number"),
    ("input,q.joint1,q.joint2,qd.joint1,qd.joint2\njoint1,1,2,3\n", ":2: 4 values, the header has 5"),
    ("input,q.joint1,q.joint2,qd.joint1,qd.joint2\n", ": the gain file has no rows"),
    ("", ": the gain file is empty"),
])
def test_a_bad_gain_file_is_one_error_naming_file_line_and_column(tmp_path, text, where):
    path = tmp_path / "gain.csv"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_gain(path, sample("double_pendulum"))
    message = str(info.value)
    assert message.startswith(str(path) + where), message
    assert "\n" not in message


def test_a_missing_gain_file_is_named(tmp_path):
    with pytest.raises(InputError, match="gone.csv: no such gain file"):
        read_gain(tmp_path / "gone.csv", sample("double_pendulum"))


def test_write_gain_checks_its_shape_and_writes_nothing_when_wrong(tmp_path):
    path = tmp_path / "gain.csv"
    with pytest.raises(InputError, match=r"expected shape \(1, 4\)"):
        write_gain(path, np.zeros((2, 4)), ["joint1"], STATE)
    with pytest.raises(InputError, match="finite"):
        write_gain(path, [[0, 0, np.inf, 0]], ["joint1"], STATE)
    assert not path.exists()
