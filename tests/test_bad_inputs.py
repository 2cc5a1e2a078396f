"""Bad input never crashes `dyn` (issue #9): a corpus run through the whole command line.

Each bad case runs `dyn …` (cli.main's group in this process, `helpers.invoke`) in a
fresh folder and must exit 2 with exactly one line on standard error, ``dyn: error: …``, that
names the place (file and line, key path, row/column or the option), with no
traceback and no output file left behind (and, for some cases, an existing
output file left untouched). The awkward-but-valid cases must work.

The cases are a table: (id, command line, files to write, text the error line
must contain). Files are tiny: a two-joint arm, a five-row trajectory, a short
scenario. The units of each kind (URDF parser, trajectory reader, scenario
loader) have their own finer tests; this file proves the whole path end to end.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import invoke

pytestmark = pytest.mark.slow  # ~90 commands; still runs in CI

INERTIAL = ('<inertial><origin xyz="0 0 -0.25"/><mass value="1"/>'
            '<inertia ixx="0.02" iyy="0.02" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>')

ROBOT = f"""<?xml version="1.0"?>
<robot name="tiny">
  <link name="base">{INERTIAL}</link>
  <link name="a">{INERTIAL}</link>
  <link name="b">{INERTIAL}</link>
  <link name="tool"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="a"/>
    <origin xyz="0 0 0" rpy="0 0 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/>
  </joint>
  <joint name="j2" type="revolute">
    <parent link="a"/><child link="b"/>
    <origin xyz="0 0 -0.5" rpy="0 0 0"/>
    <axis xyz="0 1 0"/>
  </joint>
  <joint name="tool_joint" type="fixed">
    <parent link="b"/><child link="tool"/>
    <origin xyz="0 0 -0.5"/>
  </joint>
</robot>
"""

TRAJ = "time,q.j1,q.j2\n0,0,0\n0.01,0.01,0.02\n0.02,0.04,0.08\n0.03,0.09,0.18\n0.04,0.16,0.32\n"

# a floating-base motion of the same robot, for contact-id (root at rest 1 m up, the arm swinging)
FLOAT_TRAJ = "time,q.root.x,q.root.y,q.root.z,q.root.qx,q.root.qy,q.root.qz,q.root.qw,q.j1,q.j2\n" + "".join(
    f"{k / 100},0,0,1,0,0,0,1,{(k / 10) ** 2},{2 * (k / 10) ** 2}\n" for k in range(5))

SCENARIO = """\
dyn: 1
robot: r.urdf
dt: 0.001
steps: 5
initial:
  q: {j1: 0.1}
control:
  type: pd
  kp: {j1: 10, j2: 10}
  kd: 1
  target: {j1: 0.0}
output:
  columns: [q, qd]
"""


def robot(old, new):
    assert old in ROBOT, old
    return ROBOT.replace(old, new, 1)


def scenario(old, new):
    assert old in SCENARIO, old
    return SCENARIO.replace(old, new, 1)


def traj(old, new):
    assert old in TRAJ, old
    return TRAJ.replace(old, new, 1)


def parquet_bytes(text=TRAJ):
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa_csv.read_csv(io.BytesIO(text.encode())), sink)
    return sink.getvalue()


@dataclass
class Case:
    args: list
    files: dict = field(default_factory=dict)
    where: str = ""           # text the error line must contain (the place)
    keep: bool = False        # an existing out.csv must be left untouched


SIM = ["simulate", "r.urdf", "--steps", "5", "-o", "out.csv"]
INV = ["inverse", "r.urdf", "t.csv", "-o", "out.csv"]
SCN = ["simulate", "s.yaml", "-o", "out.csv"]
R = {"r.urdf": ROBOT}
RT = {"r.urdf": ROBOT, "t.csv": TRAJ}
RF = {"r.urdf": ROBOT, "t.csv": FLOAT_TRAJ}
RS = {"r.urdf": ROBOT, "s.yaml": SCENARIO}

URDF_LINE = r"r\.urdf:\d+: "
FEEDBACK = scenario("""  type: pd
  kp: {j1: 10, j2: 10}
  kd: 1
  target: {j1: 0.0}
""", "  type: state-feedback\n  gain: k.csv\n")
GAIN = "input,q.j1,q.j2,qd.j1,qd.j2\nj1,-1,-2,-3,-4\n"
RG = {"r.urdf": ROBOT, "s.yaml": FEEDBACK, "k.csv": GAIN}

BAD = {
    # ---- URDF -------------------------------------------------------------------
    "urdf-truncated": Case(SIM, {"r.urdf": ROBOT[:len(ROBOT) // 2]}, URDF_LINE),
    "urdf-unknown-parent": Case(SIM, {"r.urdf": robot('<parent link="a"/>', '<parent link="aa"/>')}, URDF_LINE),
    "urdf-mass-text": Case(SIM, {"r.urdf": robot('<mass value="1"/>', '<mass value="heavy"/>')}, URDF_LINE),
    "urdf-mass-overflow": Case(SIM, {"r.urdf": robot('<mass value="1"/>', '<mass value="1e999"/>')}, URDF_LINE),
    "urdf-inertia-nan": Case(SIM, {"r.urdf": robot('ixx="0.02"', 'ixx="nan"')}, URDF_LINE, keep=True),
    "urdf-zero-axis": Case(SIM, {"r.urdf": robot('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>')}, URDF_LINE),
    "urdf-four-numbers": Case(SIM, {"r.urdf": robot('xyz="0 0 -0.5" rpy', 'xyz="0 0 -0.5 1" rpy')}, URDF_LINE),
    "urdf-rpy-text": Case(SIM, {"r.urdf": robot('rpy="0 0 0"', 'rpy="0 0 abc"')}, URDF_LINE),
    "urdf-joint-type": Case(SIM, {"r.urdf": robot('type="revolute"', 'type="ball"')}, URDF_LINE),
    "urdf-duplicate-link": Case(SIM, {"r.urdf": robot('<link name="tool"/>', '<link name="a"/>')}, URDF_LINE),
    "urdf-limits-reversed": Case(SIM, {"r.urdf": robot('lower="-3" upper="3"', 'lower="3" upper="-3"')}, URDF_LINE),
    "urdf-mimic-unknown": Case(SIM, {"r.urdf": robot('<axis xyz="0 1 0"/>\n  </joint>\n  <joint name="tool_joint"',
                                                     '<axis xyz="0 1 0"/><mimic joint="j9"/>\n  </joint>\n'
                                                     '  <joint name="tool_joint"')}, URDF_LINE),
    "urdf-mimic-cycle": Case(SIM, {"r.urdf": robot('<limit lower="-3"', '<mimic joint="j2"/><limit lower="-3"').replace(
        '<axis xyz="0 1 0"/>\n  </joint>\n  <joint name="tool_joint"',
        '<axis xyz="0 1 0"/><mimic joint="j1"/>\n  </joint>\n  <joint name="tool_joint"')}, URDF_LINE),
    "urdf-link-no-name": Case(SIM, {"r.urdf": robot('<link name="tool"/>', '<link/>')}, URDF_LINE),
    "urdf-joint-empty-name": Case(SIM, {"r.urdf": robot('<joint name="j2"', '<joint name=""')}, URDF_LINE),
    "urdf-empty": Case(SIM, {"r.urdf": ""}, "r.urdf"),
    "urdf-binary": Case(SIM, {"r.urdf": b"\x00\x01\x02\xff\xfe"}, "r.urdf"),
    "urdf-sdf": Case(["info", "r.urdf"], {"r.urdf": "<sdf version='1.6'><model/></sdf>"}, "r.urdf"),
    "urdf-missing": Case(["info", "nothere.urdf"], {}, "nothere.urdf"),
    "urdf-folder": Case(["info", "d.urdf"], {"d.urdf/x": ""}, "d.urdf"),
    "urdf-entity": Case(SIM, {"r.urdf": '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "x">]>'
                                        '<robot name="&e;&f;"><link name="a"/></robot>'}, "r.urdf"),
    "urdf-negative-mass": Case(["info", "r.urdf"], {"r.urdf": robot('<mass value="1"/>', '<mass value="-2"/>')},
                               URDF_LINE),
    "xacro-undefined-property": Case(["info", "r.urdf.xacro"], {"r.urdf.xacro": robot(
        '<robot name="tiny">', '<robot name="tiny" xmlns:xacro="http://www.ros.org/wiki/xacro">').replace(
        '<mass value="1"/>', '<mass value="${undefined_mass}"/>', 1)}, "r.urdf.xacro"),
    "xacro-malformed": Case(["info", "r.urdf.xacro"], {"r.urdf.xacro": "<robot xmlns:xacro='x'><xacro:if"},
                            "r.urdf.xacro"),

    # ---- trajectories -------------------------------------------------------------
    "csv-text-cell": Case(INV, {**R, "t.csv": traj("0.02,0.04", "0.02,zero")}, "t.csv:4"),
    "csv-ragged": Case(INV, {**R, "t.csv": traj("0.03,0.09,0.18", "0.03,0.09")}, "t.csv:5", keep=True),
    "csv-missing-q": Case(INV, {**R, "t.csv": TRAJ.replace("q.j2", "q.j3")}, "t.csv"),
    "csv-empty": Case(INV, {**R, "t.csv": ""}, "t.csv"),
    "csv-header-only": Case(INV, {**R, "t.csv": "time,q.j1,q.j2\n"}, "t.csv"),
    "csv-duplicate-column": Case(INV, {**R, "t.csv": TRAJ.replace("q.j2", "q.j1")}, "t.csv"),
    "csv-time-decreasing": Case(INV, {**R, "t.csv": traj("0.03,", "0.001,")}, "t.csv:5"),
    "csv-nan": Case(INV, {**R, "t.csv": traj("0.01,0.01", "0.01,nan")}, "t.csv:3"),
    "csv-inf": Case(INV, {**R, "t.csv": traj("0.01,0.01", "0.01,inf")}, "t.csv:3"),
    "csv-no-time": Case(INV, {**R, "t.csv": TRAJ.replace("time", "t")}, "t.csv"),
    "csv-empty-cell": Case(INV, {**R, "t.csv": traj("0.01,0.01", "0.01,")}, "t.csv:3"),
    "csv-binary": Case(INV, {**R, "t.csv": b"\x00\xff\x00\xfe" * 20}, "t.csv"),
    "csv-one-row": Case(INV, {**R, "t.csv": "time,q.j1,q.j2\n0,0,0\n"}, "t.csv"),
    "csv-unsupported-ext": Case(["inverse", "r.urdf", "t.txt", "-o", "out.csv"], {**R, "t.txt": TRAJ}, "t.txt"),
    "csv-missing-file": Case(INV, R, "t.csv"),
    "parquet-not-parquet": Case(["inverse", "r.urdf", "t.parquet", "-o", "out.csv"],
                                {**R, "t.parquet": TRAJ}, "t.parquet"),
    "parquet-truncated": Case(["inverse", "r.urdf", "t.parquet", "-o", "out.csv"],
                              {**R, "t.parquet": lambda: parquet_bytes()[:-30]}, "t.parquet"),
    "parquet-nan": Case(["inverse", "r.urdf", "t.parquet", "-o", "out.csv"],
                        {**R, "t.parquet": lambda: parquet_bytes(traj("0.01,0.01", "0.01,nan"))}, "t.parquet"),
    "parquet-name-not-utf8": Case(["inverse", "r.urdf", "t.parquet", "-o", "out.csv"],
                                  {**R, "t.parquet": lambda: parquet_bytes().replace(b"q.j1", b"\xf1.j1")},
                                  "t.parquet"),
    "tau-csv-unknown-column": Case(SIM + ["--tau-csv", "tau.csv"], {**R, "tau.csv": "time,tau.j9\n0,1\n1,1\n"},
                                   "--tau-csv"),
    "tau-csv-missing": Case(SIM + ["--tau-csv", "tau.csv"], R, "tau.csv"),

    # ---- scenarios ------------------------------------------------------------------
    "yaml-invalid": Case(SCN, {**RS, "s.yaml": SCENARIO + "  bad: [\n"}, "s.yaml:"),
    "yaml-unknown-key": Case(SCN, {**RS, "s.yaml": SCENARIO + "dtt: 1\n"}, "s.yaml:14: dtt"),
    "yaml-dt-negative": Case(SCN, {**RS, "s.yaml": scenario("dt: 0.001", "dt: -1")}, "s.yaml:3: dt", keep=True),
    "yaml-steps-text": Case(SCN, {**RS, "s.yaml": scenario("steps: 5", "steps: many")}, "s.yaml:4: steps"),
    "yaml-robot-missing": Case(SCN, {**RS, "s.yaml": scenario("r.urdf", "gone.urdf")}, "s.yaml:2: robot"),
    "yaml-integrator": Case(SCN, {**RS, "s.yaml": SCENARIO + "integrator: rk45\n"}, "s.yaml:14: integrator"),
    "yaml-q-length": Case(SCN, {**RS, "s.yaml": scenario("q: {j1: 0.1}", "q: [1, 2, 3]")}, "s.yaml:6: initial.q"),
    "yaml-q-name": Case(SCN, {**RS, "s.yaml": scenario("q: {j1: 0.1}", "q: {j3: 0.1}")}, "s.yaml:6: initial.q.j3"),
    "yaml-list": Case(SCN, {**RS, "s.yaml": "- dyn: 1\n- robot: r.urdf\n"}, "s.yaml:1"),
    "yaml-empty": Case(SCN, {**RS, "s.yaml": ""}, "s.yaml:1"),
    "yaml-control-type": Case(SCN, {**RS, "s.yaml": scenario("type: pd", "type: pid")}, "s.yaml:8: control.type"),
    "yaml-every-zero": Case(SCN, {**RS, "s.yaml": SCENARIO + "  every: 0\n"}, "output.every"),
    "yaml-tab": Case(SCN, {**RS, "s.yaml": scenario("  q: {j1: 0.1}", "\tq: {j1: 0.1}")}, "s.yaml:"),
    "yaml-duplicate-key": Case(SCN, {**RS, "s.yaml": SCENARIO + "steps: 3\n"}, "s.yaml:14: steps"),
    "yaml-undefined-alias": Case(SCN, {**RS, "s.yaml": scenario("kd: 1", "kd: *nope")}, "s.yaml:"),
    "yaml-contact-frame": Case(SCN, {**RS, "s.yaml": SCENARIO + "contacts:\n  model: soft\n  points:\n"
                                                                 "    - {frame: toool}\n"},
                               "contacts.points[0].frame"),
    "yaml-dt-tiny": Case(SCN, {**RS, "s.yaml": scenario("dt: 0.001", "dt: 1.0e-300").replace("steps: 5",
                                                                                             "duration: 1")},
                         "s.yaml:3: dt"),
    "yaml-version": Case(SCN, {**RS, "s.yaml": scenario("dyn: 1", "dyn: 7")}, "s.yaml:1: dyn"),
    "yaml-kp-text": Case(SCN, {**RS, "s.yaml": scenario("j2: 10", "j2: ten")}, "control.kp.j2"),
    "gain-folder": Case(SCN, {"r.urdf": ROBOT, "s.yaml": FEEDBACK, "k.csv/x": ""}, "s.yaml:9: control.gain: k.csv: is a folder"),
    "gain-no-file": Case(SCN, {"r.urdf": ROBOT, "s.yaml": FEEDBACK}, "s.yaml:9: control.gain: k.csv: no such gain file"),
    "gain-column": Case(SCN, {**RG, "k.csv": GAIN.replace("qd.j2", "qd.j3")}, "control.gain: k.csv:1: column 'qd.j3'",
                        keep=True),
    "gain-input": Case(SCN, {**RG, "k.csv": GAIN.replace("\nj1,", "\nj9,")}, "k.csv:2: column 'input': input 'j9'"),
    "gain-nan": Case(SCN, {**RG, "k.csv": GAIN.replace(",-3,", ",nan,")}, "k.csv:2: column 'qd.j1': 'nan' is not a finite"),
    "yaml-robot-bad-urdf": Case(SCN, {"r.urdf": robot('type="revolute"', 'type="ball"'), "s.yaml": SCENARIO},
                                URDF_LINE),
    "yaml-not-utf8": Case(SCN, {**RS, "s.yaml": b"dyn: 1\nrobot: \xff\xfe\n"}, "s.yaml"),
    "yaml-bad-extension": Case(["simulate", "s.json", "-o", "out.csv"], {"s.json": "{}"}, "s.json"),
    "sweep-no-block": Case(["sweep", "s.yaml", "-o", "outdir"], RS, "sweep"),

    # ---- command-line options --------------------------------------------------------
    "opt-steps-negative": Case(["simulate", "r.urdf", "--steps", "-5", "-o", "out.csv"], R, "--steps"),
    "opt-dt-zero": Case(SIM + ["--dt", "0"], R, "--dt"),
    "opt-dt-nan": Case(SIM + ["--dt", "nan"], R, "--dt"),
    "opt-dt-tiny": Case(["simulate", "r.urdf", "--dt", "1e-300", "-o", "out.csv"], R, "--dt", keep=True),
    "opt-duration-negative": Case(["simulate", "r.urdf", "--duration", "-1", "-o", "out.csv"], R, "--duration"),
    "opt-duration-inf": Case(["simulate", "r.urdf", "--duration", "inf", "-o", "out.csv"], R, "--duration"),
    "opt-steps-and-duration": Case(SIM + ["--duration", "1"], R, "--duration", keep=True),
    "opt-q0-length": Case(SIM + ["--q0", "1,2,3"], R, "--q0"),
    "opt-q0-unknown-name": Case(SIM + ["--q0", "elbow=1"], R, "--q0"),
    "opt-q0-text": Case(SIM + ["--q0", "a,b"], R, "--q0"),
    "opt-q0-nan": Case(SIM + ["--q0", "nan,0"], R, "--q0"),
    "opt-qd0-value": Case(SIM + ["--qd0", "j1=fast"], R, "--qd0"),
    "opt-integrator": Case(SIM + ["--integrator", "rk5"], R, "--integrator"),
    "opt-gravity-short": Case(SIM + ["--gravity", "0,0"], R, "--gravity"),
    "opt-gravity-inf": Case(SIM + ["--gravity", "0,0,inf"], R, "--gravity"),
    "opt-tau-length": Case(SIM + ["--tau", "1,2,3"], R, "--tau"),
    "opt-tau-unknown-name": Case(SIM + ["--tau", "j7=1"], R, "--tau"),
    "opt-columns": Case(SIM + ["--columns", "q,foo"], R, "--columns"),
    "opt-every-zero": Case(SIM + ["--every", "0"], R, "--every"),
    "opt-output-extension": Case(["simulate", "r.urdf", "--steps", "5", "-o", "out.xlsx"], R, "out.xlsx"),
    "opt-output-no-folder": Case(["simulate", "r.urdf", "--steps", "5", "-o", "nodir/out.csv"], R, "nodir"),
    "opt-polyorder": Case(INV + ["--derivatives", "savgol", "--polyorder", "1"], RT, "--polyorder"),
    "opt-window-negative": Case(INV + ["--derivatives", "savgol", "--window", "-1"], RT, "--window"),
    "opt-derivatives-given-missing": Case(INV + ["--derivatives", "given"], RT, "t.csv"),
    "opt-column-map": Case(INV + ["--columns", "q="], RT, "--columns"),
    "opt-column-map-key": Case(INV + ["--columns", "x=pos_{joint}"], RT, "--columns"),
    "contact-unknown-frame": Case(["contact-id", "r.urdf", "t.csv", "--contact", "toool", "-o", "out.csv"], RF,
                                  "--contact"),
    "contact-bad-window": Case(["contact-id", "r.urdf", "t.csv", "--contact", "tool@2:1", "-o", "out.csv"], RF,
                               "--contact"),
    "contact-guess-short": Case(["contact-id", "r.urdf", "t.csv", "--contact", "tool", "--guess", "tool=1,2",
                                 "-o", "out.csv"], RF, "--guess"),
    "contact-guess-unknown": Case(["contact-id", "r.urdf", "t.csv", "--contact", "tool", "--guess",
                                   "foot=0,0,1,0,0,0", "-o", "out.csv"], RF, "--guess"),
    "contact-smoothing-alone": Case(["contact-id", "r.urdf", "t.csv", "--contact", "tool", "--smoothing", "1",
                                     "-o", "out.csv"], RF, "--smoothing"),
    "contact-friction-negative": Case(["contact-id", "r.urdf", "t.csv", "--contact", "tool", "--friction", "-1",
                                       "-o", "out.csv"], RF, "--friction"),
    "energy-tolerance-zero": Case(["energy-check", "r.urdf", "--tolerance", "0", "--report", "out.json"], R,
                                  "--tolerance"),
    "energy-dt-tiny": Case(["energy-check", "r.urdf", "--dt", "1e-300", "--report", "out.json"], R, "--dt"),
    "energy-q0-length": Case(["energy-check", "r.urdf", "--q0", "1,2,3,4", "--report", "out.json"], R, "--q0"),
    "plot-no-column": Case(["plot", "t.csv", "--columns", "nomatch*", "-o", "out.png"], {"t.csv": TRAJ}, "t.csv"),
    "unknown-command": Case(["simulat", "r.urdf"], R, "simulat"),
    "unknown-option": Case(SIM + ["--stepz", "3"], R, "--stepz"),
}

NOTICES = ("dyn: compiling", "dyn: random initial state")
OUTPUTS = ("out.csv", "out.json", "out.png", "out.xlsx", "outdir", "nodir")


def write_files(folder: Path, files: dict) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        content = content() if callable(content) else content
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def error_lines(stderr: str):
    """The lines of standard error that are not notices (first-run compiling, energy-check's seed)."""
    return [ln for ln in stderr.splitlines() if not ln.startswith(NOTICES)]


def test_the_corpus_is_big_enough():
    kinds = {"urdf": 0, "xacro": 0, "csv": 0, "parquet": 0, "tau": 0, "yaml": 0, "sweep": 0}
    for case in BAD:
        prefix = case.split("-")[0]
        kinds[prefix] = kinds.get(prefix, 0) + 1
    assert len(BAD) >= 60
    assert kinds["urdf"] + kinds["xacro"] >= 15 and kinds["csv"] + kinds["parquet"] >= 15 and kinds["yaml"] >= 15


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, case):
    c = BAD[case]
    write_files(tmp_path, c.files)
    if c.keep:
        (tmp_path / "out.csv").write_text("precious\n")
    r = invoke(*c.args, cwd=tmp_path)
    lines = error_lines(r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("dyn: error: "), r.stderr
    assert re.search(c.where if c.where.startswith("r\\") else re.escape(c.where), lines[0]), (c.where, lines[0])
    assert r.stdout == ""
    for name in OUTPUTS:
        if c.keep and name == "out.csv":
            assert (tmp_path / name).read_text() == "precious\n"
        else:
            assert not (tmp_path / name).exists(), f"{name} was left behind"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary file was left behind"


# ---- awkward but valid -------------------------------------------------------------

AWKWARD_ROBOT = ("\ufeff" + ROBOT).replace('<robot name="tiny">', """<!-- a comment, é ü 日本 -->
<robot name="tiny" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <material name="blue"><color rgba="0 0 1 1"/></material>
  <material name="tex"><texture filename="package://nowhere/t.png"/></material>""").replace(
    '<link name="base">', """<link name="base"><visual><geometry><mesh filename="package://nowhere/base.dae"
      scale="1 1 1"/></geometry><material name="blue"/></visual>
    <collision><geometry><mesh filename="file:///no/such.stl"/></geometry></collision>""").replace(
    "</robot>", """  <gazebo reference="a"><mu1>0.5</mu1><material>Gazebo/Red</material></gazebo>
  <gazebo><plugin name="p" filename="libp.so"/></gazebo>
  <transmission name="t1"><type>transmission_interface/SimpleTransmission</type>
    <joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
    <actuator name="m1"><mechanicalReduction>1</mechanicalReduction></actuator></transmission>
  <link name="empty_leaf"/>
  <joint name="leaf_joint" type="fixed"><parent link="a"/><child link="empty_leaf"/></joint>
</robot>""")

UNICODE_ROBOT = ROBOT.replace('"j1"', '"épaule"').replace('"j2"', '"коленo"').replace('"tool"', '"outil_ü"')

AWKWARD_SCENARIO = """\
# comments, anchors and aliases, CRLF line endings
dyn: 1
robot: r.urdf   # relative to this file
dt: 1.0e-3
steps: 5
gains: &gains {j1: 10, j2: 10}
""".replace("gains: &gains {j1: 10, j2: 10}\n", "") + """\
control:
  type: pd
  kp: &kp {j1: 10, j2: 10}
  kd: *kp
  target: {j1: 0.0}
initial:
  q: {j1: 0.1}
output: {columns: [q, qd, energy]}
"""

GOOD = {
    "awkward-urdf-info": Case(["info", "r.urdf"], {"r.urdf": AWKWARD_ROBOT}),
    "awkward-urdf-simulates": Case(["simulate", "r.urdf", "--steps", "3", "-o", "out.csv"], {"r.urdf": AWKWARD_ROBOT}),
    "unicode-names": Case(["simulate", "r.urdf", "--steps", "3", "--q0", "épaule=0.2", "--q0", "коленo=0.1",
                           "-o", "out.csv"], {"r.urdf": UNICODE_ROBOT}),
    "csv-crlf-bom": Case(INV, {**R, "t.csv": ("\ufeff" + TRAJ).replace("\n", "\r\n").encode("utf-8")}),
    "csv-extra-columns-reordered": Case(INV, {**R, "t.csv": "note,q.j2,time,q.j1,extra\n" + "\n".join(
        f"{k},{row.split(',')[2]},{row.split(',')[0]},{row.split(',')[1]},{k * 1.5}"
        for k, row in enumerate(TRAJ.splitlines()[1:])) + "\n"}),
    "csv-quoted-header": Case(INV, {**R, "t.csv": TRAJ.replace("time,q.j1,q.j2", '"time","q.j1","q.j2"')}),
    "parquet-input": Case(["inverse", "r.urdf", "t.parquet", "-o", "out.csv"], {**R, "t.parquet": parquet_bytes}),
    "parquet-output": Case(["simulate", "r.urdf", "--steps", "3", "-o", "out.parquet"], R),
    "yaml-anchors-crlf": Case(["simulate", "s.yaml", "-o", "out.csv"],
                              {**R, "s.yaml": AWKWARD_SCENARIO.replace("\n", "\r\n")}),
    "q0-spaces-and-exponents": Case(["simulate", "r.urdf", "--steps", "3", "--q0", " j1 = 1e-1 ", "-o", "out.csv"],
                                    R),
    "tau-csv-extra-columns": Case(SIM + ["--tau-csv", "tau.csv"],
                                  {**R, "tau.csv": "time,tau.j1,comment\n0,0.5,1\n1,0.5,2\n"}),
    "xacro-robot": Case(["info", "r.urdf.xacro"], {"r.urdf.xacro": ROBOT.replace(
        '<robot name="tiny">', '<robot name="tiny" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                               '  <xacro:property name="m" value="1"/>').replace('<mass value="1"/>',
                                                                                 '<mass value="${m * 1}"/>')}),
    "stdin-trajectory": Case(["inverse", "r.urdf", "-", "-o", "out.csv"], R),
}


@pytest.mark.parametrize("case", list(GOOD))
def test_awkward_but_valid_input_works(tmp_path, case):
    c = GOOD[case]
    write_files(tmp_path, c.files)
    r = invoke(*c.args, cwd=tmp_path, input=TRAJ if case == "stdin-trajectory" else None)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "error" not in r.stderr, r.stderr
    out = [a for a in c.args if a.startswith("out.")]
    if out:
        assert (tmp_path / out[0]).stat().st_size > 0
    else:
        assert r.stdout.strip()
