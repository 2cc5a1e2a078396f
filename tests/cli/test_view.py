"""`dyn view`: the page written, its size on standard error, scenarios as ROBOT, package
folders, and one-line errors with exit code 2 and no page left behind."""
from pathlib import Path

import numpy as np

from dynlib.files.trajectory import column_names, write_trajectory
from helpers import ROBOTS_DIR, invoke, run_process, sample
from tests.runs.test_view import animation_of, commands_of, objects_of

ARM6 = ROBOTS_DIR / "arm6.urdf"
SCENARIOS = ROBOTS_DIR.parent / "scenarios"


def arm_motion(path, n=101):
    arm = sample("arm6")
    t = np.linspace(0, 1, n)
    Q = 0.5 * np.sin(np.outer(t, np.arange(1, arm.nq + 1)))
    write_trajectory(path, column_names(arm.q_names, arm.v_names, ("q",)), np.column_stack([t, Q]))
    return path


def test_help_has_examples():
    r = invoke("view", "--help")
    assert r.exit_code == 0
    assert "Examples" in r.output and "#t=SECONDS" in r.output and "--package-path" in r.output
    assert "view" in invoke("--help").output


def test_writes_a_page_and_says_its_size(tmp_path):
    arm_motion(tmp_path / "m.csv")
    r = invoke("view", ARM6, tmp_path / "m.csv", "-o", tmp_path / "m.html", "--trace", "tool0")
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "m.html").read_bytes()
    assert page.startswith(b"<!DOCTYPE html>") and b"MeshCat" in page
    err = r.stderr
    size_mb = len(page) / 1e6
    assert f"{size_mb:.2f} MB" in err and "31 frames for 1 s" in err and "built in" in err
    assert r.stdout == ""


def test_page_on_standard_output_and_trajectory_on_standard_input(tmp_path):
    arm_motion(tmp_path / "m.csv")
    r = run_process("view", ARM6, "-", input=(tmp_path / "m.csv").read_bytes(), text=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"<!DOCTYPE html>") and r.stdout.rstrip().endswith(b"</html>")


def test_scenario_as_robot_gives_the_floating_base_and_the_ground(tmp_path):
    out = tmp_path / "quad.csv"
    r = invoke("simulate", SCENARIOS / "contact_unilateral_quadruped.yaml", "--duration", "0.2",
               "--columns", "q,qd,contact", "-o", out)
    assert r.exit_code == 0, r.output
    r = invoke("view", SCENARIOS / "contact_unilateral_quadruped.yaml", out, "-o", tmp_path / "quad.html")
    assert r.exit_code == 0, r.output
    assert "warning" not in r.output
    # the URDF alone cannot read a floating-base file without --floating-base
    r = invoke("view", ROBOTS_DIR / "quadruped.urdf", out, "-o", tmp_path / "bad.html")
    assert r.returncode == 2 and "--floating-base" in r.stderr and not (tmp_path / "bad.html").exists()
    r = invoke("view", ROBOTS_DIR / "quadruped.urdf", out, "--floating-base", "-o", tmp_path / "urdf.html")
    assert r.exit_code == 0, r.output


def test_package_path_finds_meshes_and_a_missing_package_is_a_warning(tmp_path):
    (tmp_path / "pkgs" / "tri_meshes" / "meshes").mkdir(parents=True)
    (tmp_path / "pkgs" / "tri_meshes" / "meshes" / "tri.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    urdf = tmp_path / "robot" / "r.urdf"
    urdf.parent.mkdir()
    urdf.write_text("""<robot name="r">
  <link name="a"><visual><geometry><mesh filename="package://tri_meshes/meshes/tri.obj"/></geometry></visual></link>
  <link name="b">
    <inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://tri_meshes/meshes/tri.obj"/></geometry></visual></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>""")
    write_trajectory(tmp_path / "m.csv", ["time", "q.j"], np.array([[0.0, 0.0], [1.0, 0.5]]))
    r = invoke("view", urdf, tmp_path / "m.csv", "-o", tmp_path / "a.html")
    assert r.returncode == 0
    err = r.stderr
    assert "warning:" in err and "'tri_meshes' not found" in err and "2 meshes drawn as placeholder boxes" in err
    assert "link frames" not in err  # the placeholder boxes stand in (issue 34), not the link frames
    r = invoke("view", urdf, tmp_path / "m.csv", "-o", tmp_path / "b.html", "--package-path", tmp_path / "pkgs")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert "1 mesh file)" in r.stderr
    assert len((tmp_path / "b.html").read_bytes()) > 0


def test_bad_input_is_one_line_exit_2_and_no_page(tmp_path):
    arm_motion(tmp_path / "m.csv")
    cases = [
        (("--trace", "tool9"), "no frame (link) 'tool9'"),
        (("--columns", "q=pos_{joint}"), "missing"),
        (("--columns", "nonsense"), "--columns"),
        (("--fps", "0"), "--fps"),
    ]
    for extra, needle in cases:
        r = invoke("view", ARM6, tmp_path / "m.csv", "-o", tmp_path / "p.html", *extra)
        assert r.returncode == 2, (extra, r.stderr)
        assert needle in r.stderr and r.stderr.count("\n") == 1, (extra, r.stderr)
    r = invoke("view", ARM6, tmp_path / "nothing.csv", "-o", tmp_path / "p.html")
    assert r.returncode == 2 and "nothing.csv" in r.stderr
    r = invoke("view", ARM6, tmp_path / "m.csv", "-o", tmp_path / "no_such_folder" / "p.html")
    assert r.returncode == 2 and "no_such_folder" in r.stderr
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["m.csv"]


def test_simulate_view_writes_the_page_of_the_run(tmp_path):
    r = invoke("simulate", SCENARIOS / "contact_unilateral_quadruped.yaml", "--duration", "0.5",
               "-o", tmp_path / "q.csv", "--view", tmp_path / "q.html")
    assert r.returncode == 0, r.stderr
    assert "q.html: " in r.stderr and "16 frames for 0.5 s" in r.stderr
    cmds = commands_of((tmp_path / "q.html").read_bytes())
    assert "/dyn/ground" in objects_of(cmds)
    assert {f"/dyn/contacts/{f}" for f in ("lf_foot", "lh_foot", "rf_foot", "rh_foot")} <= set(animation_of(cmds))
    r = invoke("simulate", ARM6, "--steps", "10", "-o", tmp_path / "a.csv", "--view", tmp_path / "nope" / "a.html")
    assert r.returncode == 2 and "--view" in r.stderr and not (tmp_path / "a.csv").exists()


def test_sweep_view_writes_a_page_per_variant_and_an_index(tmp_path):
    r = invoke("sweep", SCENARIOS / "sweep_arm6_pd.yaml", "-o", tmp_path / "sw", "--workers", "1", "--view")
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in (tmp_path / "sw").iterdir())
    trajectories = [f for f in files if f.endswith(".csv") and f != "summary.csv"]
    assert len(trajectories) == 6
    assert all(f[:-4] + ".html" in files for f in trajectories) and "index.html" in files
    index = (tmp_path / "sw" / "index.html").read_text()
    assert all(f'href="{f[:-4]}.html"' in index for f in trajectories) and 'href="summary.csv"' in index
    assert "6 pages written" in r.stderr
    r = invoke("sweep", SCENARIOS / "sweep_arm6_pd.yaml", "-o", tmp_path / "sw", "--workers", "1", "--view")
    assert r.returncode == 0 and "0 pages written" in r.stderr  # done before, pages newer than the runs


def test_a_bag_with_two_joint_state_topics_needs_topic_and_a_plain_clock_takes_time_unit(tmp_path):
    """--topic and --time-unit reach the recording reader, as on dyn inverse."""
    from recording_files import EPOCH_NS, messages, swing, write_bag

    arm = sample("arm6")
    t_ns = EPOCH_NS + np.arange(201, dtype=np.int64) * 5_000_000  # 1 s at 200 Hz
    Q = swing(arm.nq, (t_ns - t_ns[0]) * 1e-9)[0]
    bag = tmp_path / "two.bag"
    write_bag(bag, {"/joint_states": messages(arm.q_names, t_ns, Q),
                    "/left/joint_states": messages(arm.q_names, t_ns, Q + 0.1)}, "bag")
    r = invoke("view", ARM6, bag, "-o", tmp_path / "a.html")
    assert r.returncode == 2 and "--topic" in r.stderr and not (tmp_path / "a.html").exists(), r.stderr
    r = invoke("view", ARM6, bag, "--topic", "/left/joint_states", "-o", tmp_path / "a.html")
    assert r.returncode == 0 and "31 frames for 1 s" in r.stderr, r.stderr
    # a plain time column in milliseconds, 0 to 1000: seconds unless told
    ms = tmp_path / "ms.csv"
    write_trajectory(ms, column_names(arm.q_names, arm.v_names, ("q",)),
                     np.column_stack([np.linspace(0, 1000, 101), Q[::2]]))
    r = invoke("view", ARM6, ms, "--time-unit", "ms", "--fps", "10", "-o", tmp_path / "ms.html")
    assert r.returncode == 0 and "11 frames for 1 s" in r.stderr, r.stderr


def test_show_and_compare(tmp_path):
    """Issue 34: --show inertia,com and --compare OTHER.urdf; a different robot to compare, or an
    unknown overlay, is one line, exit 2, and no page."""
    arm_motion(tmp_path / "m.csv")
    heavy = ARM6.read_text().replace('<mass value="', '<mass value="2')  # the same joints, other masses
    (tmp_path / "heavy.urdf").write_text(heavy)
    r = invoke("view", ARM6, tmp_path / "m.csv", "--show", "inertia,com", "--compare", tmp_path / "heavy.urdf",
               "-o", tmp_path / "m.html")
    assert r.returncode == 0, r.stderr
    paths = objects_of(commands_of((tmp_path / "m.html").read_bytes()))
    assert {p.split("/")[2] for p in paths if p.startswith("/dyn/")} >= {"inertia", "compare", "com", "robot"}
    for extra, said in ((("--compare", ROBOTS_DIR / "arm7.urdf"), "--compare: not the same robot as 'arm6'"),
                        (("--show", "inertia,weight"), "--show: unknown overlay 'weight'")):
        r = invoke("view", ARM6, tmp_path / "m.csv", *extra, "-o", tmp_path / "bad.html")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and said in r.stderr, r.stderr
        assert r.stderr.startswith("dyn: error: ") and not (tmp_path / "bad.html").exists()
