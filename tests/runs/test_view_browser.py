"""dyn view pages in a real browser: Debian's Chromium driven by Playwright (nothing is
downloaded; the tests are skipped only where there is no Chromium).

Two pages: a fixed-base arm in a catkin-style workspace whose URDF names Collada meshes by
package://, binary and ASCII STL and an OBJ by relative paths (ur5's meshes from
example-robot-data, plus files written here), and the floating-base quadruped of
scenarios/contact_unilateral_quadruped.yaml with contact forces, ground and a trace. Each
loads from file:// with no page error, no console error and no request other than the page
file itself; #t=SECONDS opens it paused at that time; screenshots at two instants differ
where the robot is and nowhere else.

Real robots' meshes (issue 34): example-robot-data's UR5, TALOS (talos_reduced) and a1 and
pybullet's Franka Panda (whose OBJs the viewer's own loader could not merge) each draw a mesh per
<visual> with no console error or warning and no "could not be loaded" notice, a screenshot of
each in the test's folder; a UR5 with a missing and a damaged mesh draws placeholder boxes there.

Set DYN_VIEW_SCREENSHOT=docs/img/view.png to save the quadruped page's picture (the README's).
"""
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cli.main import dyn
from dynlib.files.trajectory import column_names, write_trajectory
from helpers import ROBOTS_DIR, erd_dir

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1000, "height": 640}
SCENARIO = ROBOTS_DIR.parent / "scenarios" / "contact_unilateral_quadruped.yaml"


def chromium_path():
    for candidate in (os.environ.get("DYN_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium, or set DYN_CHROMIUM): "
                    "the dyn view pages are not opened")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield b
        b.close()


def run(*args):
    r = CliRunner().invoke(dyn, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r


class Opened:
    """A page opened at `url`, with what it asked the network for and what went wrong in it."""

    def __init__(self, browser, url):
        self.requests, self.errors = [], []
        self.page = browser.new_page(viewport=VIEWPORT)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console error: {m.text}"))

        def route(r):
            self.requests.append(r.request.url)
            if r.request.url.startswith(("file:", "data:")):
                r.continue_()
            else:
                r.abort()

        self.page.route("**/*", route)
        self.page.goto(url)
        self.page.wait_for_function("document.body.dataset.dynReady === '1'", timeout=120_000)
        self.page.wait_for_timeout(300)

    def js(self, code, arg=None):
        return self.page.evaluate(code, arg)

    def screenshot(self, path=None) -> np.ndarray:
        from io import BytesIO

        from PIL import Image

        png = self.page.screenshot(path=path)
        return np.asarray(Image.open(BytesIO(png)).convert("RGB"), dtype=np.int16)

    def region(self, paths) -> tuple:
        """(x0, y0, x1, y1): the screen rectangle of the objects at `paths` (their bounding box, projected)."""
        pts = self.js("""(paths) => {
            const THREE = MeshCat.THREE, v = window.viewer, box = new THREE.Box3();
            for (const p of paths) { const o = v.scene_tree.find(p).object; o.updateMatrixWorld(true); box.expandByObject(o); }
            const out = [];
            for (const x of [box.min.x, box.max.x]) for (const y of [box.min.y, box.max.y]) for (const z of [box.min.z, box.max.z]) {
                const q = new THREE.Vector3(x, y, z).project(v.camera);
                out.push([(q.x + 1) / 2 * window.innerWidth, (1 - q.y) / 2 * window.innerHeight]);
            }
            return out; }""", paths)
        pts = np.array(pts)
        return (*np.floor(pts.min(axis=0)).astype(int), *np.ceil(pts.max(axis=0)).astype(int))

    def overlays(self) -> list:
        """Screen rectangles of the page's controls and caption (they show the time)."""
        return self.js("""() => [window.viewer.gui.domElement, document.getElementById('dyn-info')].map(e => {
            const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })""")

    def animation_state(self):
        return self.js("() => ({time: window.viewer.animator.time, playing: window.viewer.animator.playing, "
                       "duration: window.viewer.animator.duration})")

    def close(self):
        self.page.close()

    def check_clean(self):
        assert self.errors == []
        assert self.requests and all(u.startswith(("file:", "data:")) for u in self.requests), self.requests


def mask(shape, rects):
    m = np.zeros(shape[:2], dtype=bool)
    for x0, y0, x1, y1 in rects:
        m[max(0, int(y0)):max(0, int(np.ceil(y1))), max(0, int(x0)):max(0, int(np.ceil(x1)))] = True
    return m


def changed_where_the_robot_is(browser, url, t0, t1, paths, save=None):
    """Screenshots of `url` at #t=t0 and #t=t1: the share of changed pixels in the robot's
    screen region (at either time) and outside it (controls and caption left out)."""
    shots, regions, overlays = [], [], []
    for t in (t0, t1):
        opened = Opened(browser, f"{url}#t={t}")
        opened.check_clean()
        state = opened.animation_state()
        assert abs(state["time"] - t) < 1e-9 and state["playing"] is False
        shots.append(opened.screenshot(save if t == t1 else None))
        regions.append(opened.region(paths))
        overlays += opened.overlays()
        opened.close()
    changed = np.abs(shots[0] - shots[1]).max(axis=2) > 24
    covered = mask(changed.shape, overlays)
    robot = mask(changed.shape, regions) & ~covered
    rest = ~mask(changed.shape, [(x0 - 3, y0 - 3, x1 + 3, y1 + 3) for x0, y0, x1, y1 in regions]) & ~covered
    assert robot.sum() > 1000, regions  # the robot is on the screen
    return changed[robot].mean(), changed[rest].mean()


# ------------------------------------------------------------------- the arm

def cylinder_mesh(radius, length, n=24):
    """Vertices and triangles of a closed cylinder along z from 0 to length."""
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.column_stack([radius * np.cos(a), radius * np.sin(a), np.zeros(n)])
    v = np.vstack([ring, ring + [0, 0, length], [[0, 0, 0], [0, 0, length]]])
    f = []
    for i in range(n):
        j = (i + 1) % n
        f += [(i, j, n + j), (i, n + j, n + i), (2 * n, j, i), (2 * n + 1, n + i, n + j)]
    return v, np.array(f)


def write_obj(path, v, f):
    path.write_text("".join(f"v {x:.6f} {y:.6f} {z:.6f}\n" for x, y, z in v)
                    + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f))


def write_ascii_stl(path, v, f):
    lines = ["solid piece"]
    for tri in f:
        p = v[tri]
        n = np.cross(p[1] - p[0], p[2] - p[0])
        n = n / (np.linalg.norm(n) or 1)
        lines += [f"facet normal {n[0]:.6f} {n[1]:.6f} {n[2]:.6f}", "outer loop"]
        lines += [f"vertex {x:.6f} {y:.6f} {z:.6f}" for x, y, z in p]
        lines += ["endloop", "endfacet"]
    path.write_text("\n".join(lines + ["endsolid piece", ""]))


@pytest.fixture(scope="module")
def arm_page(tmp_path_factory):
    """ur5 as a package of a catkin-style workspace, its meshes named four ways; an 8 s swing."""
    ur = erd_dir() / "ur_description"
    ws = tmp_path_factory.mktemp("ws")
    pkg = ws / "src" / "meshy_arm_description"
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "package.xml").write_text('<?xml version="1.0"?>\n<package format="2">\n  <name>meshy_arm_description</name>\n'
                                     "  <version>1.0.0</version>\n</package>\n")
    shutil.copytree(ur / "meshes" / "ur5" / "visual", pkg / "meshes" / "dae")
    shutil.copy(ur / "meshes" / "ur5" / "collision" / "shoulder.stl", pkg / "meshes" / "shoulder.stl")
    write_obj(pkg / "meshes" / "upperarm.obj", *cylinder_mesh(0.055, 0.425))
    write_ascii_stl(pkg / "meshes" / "forearm.stl", *cylinder_mesh(0.045, 0.39))
    text = (ur / "urdf" / "ur5_robot.urdf").read_text()
    text = re.sub(r'filename="package://example-robot-data/robots/ur_description/meshes/ur5/visual/(\w+)\.dae"',
                  r'filename="package://meshy_arm_description/meshes/dae/\1.dae"', text)
    text = text.replace('"package://meshy_arm_description/meshes/dae/shoulder.dae"', '"../meshes/shoulder.stl"')
    text = text.replace('"package://meshy_arm_description/meshes/dae/upperarm.dae"', '"../meshes/upperarm.obj"')
    text = text.replace('"package://meshy_arm_description/meshes/dae/forearm.dae"',
                        f'"file://{pkg}/meshes/forearm.stl"')
    urdf = pkg / "urdf" / "meshy_arm.urdf"
    urdf.write_text(text)
    import dynlib

    model = dynlib.load(urdf)
    t = np.arange(0, 8.0 + 1e-9, 2e-3)
    Q = np.tile(model.q_neutral, (len(t), 1))
    Q[:, 0] = 1.5 * np.sin(1.5 * t)            # shoulder_pan swings the whole arm
    Q[:, 1] = -1.0 + 0.6 * np.sin(2.0 * t)
    Q[:, 2] = 1.2 * np.sin(2.5 * t)
    write_trajectory(ws / "swing.csv", column_names(model.q_names, model.v_names, ("q",)), np.column_stack([t, Q]))
    r = run("view", urdf, ws / "swing.csv", "-o", ws / "arm.html")
    assert "warning" not in r.output, r.output
    return ws / "arm.html", model


def test_arm_meshes_all_load_without_errors_or_network(browser, arm_page):
    html, model = arm_page
    opened = Opened(browser, html.as_uri())
    opened.check_clean()
    counts = opened.js("""() => {
        let meshes = 0, empty = 0;
        window.viewer.scene_tree.find(['dyn', 'robot']).object.traverse(o => {
            if (o.isMesh) { const n = o.geometry.attributes.position ? o.geometry.attributes.position.count : 0;
                            if (n > 0) meshes++; else empty++; } });
        return {meshes, empty}; }""")
    assert counts == {"meshes": len(model.visuals), "empty": 0}
    state = opened.animation_state()
    assert state["playing"] is True and abs(state["duration"] - 8.0) < 1e-6
    opened.page.wait_for_timeout(500)
    assert opened.animation_state()["time"] > state["time"]  # it plays
    opened.js("() => { window.location.hash = '#t=1.25'; }")
    opened.page.wait_for_timeout(200)
    state = opened.animation_state()
    assert abs(state["time"] - 1.25) < 1e-9 and state["playing"] is False  # a new #t seeks and pauses
    opened.close()


def test_arm_screenshots_differ_where_the_arm_is(browser, arm_page):
    html, _ = arm_page
    inside, outside = changed_where_the_robot_is(browser, html.as_uri(), 0.2, 1.4, [["dyn", "robot"]])
    assert inside > 0.05 and outside < 0.002, (inside, outside)


# ------------------------------------------------------------------- the quadruped

@pytest.fixture(scope="module")
def quadruped_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("quad")
    here = os.getcwd()
    os.chdir(folder)  # the page's caption names the file as given: quad.csv
    try:
        run("simulate", SCENARIO, "--columns", "q,qd,contact", "-o", "quad.csv")
        run("view", SCENARIO, "quad.csv", "--trace", "lf_foot", "-o", "quad.html")
    finally:
        os.chdir(here)
    return folder / "quad.html"


def test_quadruped_contacts_ground_and_trace(browser, quadruped_page):
    opened = Opened(browser, quadruped_page.as_uri() + "#t=1.5")
    opened.check_clean()
    shown = opened.js("""() => {
        const c = window.viewer.scene_tree.find(['dyn', 'contacts']).children;
        return Object.keys(c).filter(k => c[k].object.visible); }""")
    assert sorted(shown) == ["lf_foot", "lh_foot", "rf_foot", "rh_foot"]  # standing: four loaded feet
    present = opened.js("() => ['ground', 'traces'].map(k => k in window.viewer.scene_tree.find(['dyn']).children)")
    assert present == [True, True]
    opened.close()


def test_quadruped_screenshots_differ_where_the_robot_is(browser, quadruped_page):
    save = os.environ.get("DYN_VIEW_SCREENSHOT")
    inside, outside = changed_where_the_robot_is(browser, quadruped_page.as_uri(), 0.0, 1.5,
                                                 [["dyn", "robot"], ["dyn", "contacts"]], save=save)
    # it settles a few millimetres and the feet's force arrows appear
    assert inside > 0.005 and outside < 0.002, (inside, outside)


# ------------------------------------------------------------------- inertia boxes (issue 34)

@pytest.fixture(scope="module")
def inertia_page(tmp_path_factory):
    """arm7's inertia boxes against a model of it with a 1.5 kg gripper on its flange (what `dyn identify`
    finds in the README), centres of mass too; DYN_VIEW_INERTIA_PAGE=PAGE.html checks that page instead
    (the README's identified.html, for its picture)."""
    given = os.environ.get("DYN_VIEW_INERTIA_PAGE")
    import dynlib

    if given:
        return Path(given).resolve(), dynlib.load(ROBOTS_DIR / "arm7.urdf")
    folder = tmp_path_factory.mktemp("inertia")
    gripper = ('<link name="gripper"><inertial><origin xyz="0.02 0 0.06"/><mass value="1.5"/>'
               '<inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.002"/></inertial></link>'
               '<joint name="gripper_mount" type="fixed"><parent link="flange"/><child link="gripper"/></joint>')
    (folder / "gripper.urdf").write_text((ROBOTS_DIR / "arm7.urdf").read_text().replace("</robot>", gripper + "</robot>"))
    model = dynlib.load(ROBOTS_DIR / "arm7.urdf")
    t = np.arange(0, 2.0 + 1e-9, 1e-2)
    Q = np.tile(model.q_neutral, (len(t), 1)) + 0.6 * np.sin(np.outer(t, np.arange(1, model.nq + 1)))
    write_trajectory(folder / "m.csv", column_names(model.q_names, model.v_names, ("q",)), np.column_stack([t, Q]))
    run("view", ROBOTS_DIR / "arm7.urdf", folder / "m.csv", "--show", "inertia,com", "--compare",
        folder / "gripper.urdf", "-o", folder / "inertia.html")
    return folder / "inertia.html", model


def test_inertia_boxes_of_both_models_are_in_the_scene(browser, inertia_page):
    html, model = inertia_page
    opened = Opened(browser, html.as_uri() + "#t=0")
    opened.check_clean()
    counts = opened.js("""() => {
        const out = {};
        for (const root of ['inertia', 'compare']) {
            const node = window.viewer.scene_tree.find(['dyn', root]);
            let boxes = 0;
            node.object.traverse(o => { if (o.isMesh && o.geometry.type === 'BoxGeometry') boxes++; });
            out[root] = boxes;
        }
        return out; }""")
    massive = int(np.count_nonzero(model.arrays.inertia[:, 0, 0] > 0))
    assert counts == {"inertia": massive, "compare": massive}
    assert opened.js("() => window.viewer.gui.closed") is True  # the controls start closed: the picture whole
    inside = opened.region([["dyn", "robot"]])
    assert 0 <= inside[0] and 0 <= inside[1] and inside[2] <= VIEWPORT["width"] and inside[3] <= VIEWPORT["height"]
    opened.screenshot(os.environ.get("DYN_VIEW_INERTIA_SCREENSHOT"))


# ------------------------------------------------------------------- real robots' meshes (issue 34)

def real_robots():
    import importlib.util

    erd = erd_dir()
    spec = importlib.util.find_spec("pybullet_data")
    panda = Path(spec.origin).parent / "franka_panda" / "panda.urdf" if spec and spec.origin else None
    return {"ur5": (erd / "ur_description" / "urdf" / "ur5_robot.urdf", False),
            "panda": (panda, False),  # its link5-7 OBJs mix faces with and without texture coordinates
            "talos": (erd / "talos_data" / "robots" / "talos_reduced.urdf", True),
            "a1": (erd / "a1_description" / "urdf" / "a1.urdf", True)}


def count_meshes(opened):
    return opened.js("""() => {
        let meshes = 0, empty = 0;
        window.viewer.scene_tree.find(['dyn', 'robot']).object.traverse(o => {
            if (o.isMesh) { const n = o.geometry.attributes.position ? o.geometry.attributes.position.count : 0;
                            if (n > 0) meshes++; else empty++; } });
        return {meshes, empty}; }""")


@pytest.mark.parametrize("name", ["ur5", "panda", "talos", "a1"])
def test_real_robots_draw_every_visual(browser, tmp_path, name):
    """Issue 34: every <visual> of real robots' URDFs is in the scene (the page counted), no console
    error or warning, no "could not be loaded" notice, no warning on the command line but the missing
    .mtl files Panda's OBJs name; a screenshot per robot in the test's folder."""
    urdf, floating = real_robots()[name]
    if urdf is None or not urdf.is_file():
        pytest.skip(f"{name}'s URDF is not installed")
    import dynlib

    model = dynlib.load(urdf, floating_base=floating)
    t = np.arange(0, 2.0 + 1e-9, 0.01)
    Q = np.tile(model.q_neutral, (len(t), 1))
    first = 7 if floating else 0
    Q[:, first:] += 0.3 * np.sin(np.outer(t, np.linspace(0.5, 2.0, model.nq - first)))
    write_trajectory(tmp_path / "m.csv", column_names(model.q_names, model.v_names, ("q",)), np.column_stack([t, Q]))
    r = run("view", urdf, tmp_path / "m.csv", "-o", tmp_path / f"{name}.html", *(["--floating-base"] if floating else []))
    warnings = [ln for ln in r.output.splitlines() if "warning" in ln]
    assert all("material library" in w and "not found" in w for w in warnings), r.output
    opened = Opened(browser, (tmp_path / f"{name}.html").as_uri())
    warned = []
    opened.page.on("console", lambda m: m.type in ("warning", "error") and warned.append(m.text))
    opened.page.reload()
    opened.page.wait_for_function("document.body.dataset.dynReady === '1'", timeout=120_000)
    opened.page.wait_for_timeout(300)
    opened.check_clean()
    assert warned == []
    assert opened.js("() => document.getElementById('dyn-status').textContent") == ""
    assert count_meshes(opened) == {"meshes": len(model.visuals), "empty": 0}
    shot = opened.screenshot(str(tmp_path / f"{name}.png"))
    opened.close()
    assert (np.ptp(shot.reshape(-1, 3), axis=0) > 60).any()  # something drawn, not a blank page


def test_placeholders_load_clean_and_count_as_the_visuals(browser, tmp_path):
    """UR5 with one mesh missing and one a damaged STL: two warnings on the command line, and the page
    still holds a mesh for every <visual> (two placeholder boxes), with no console error or notice."""
    ur = erd_dir() / "ur_description"
    shutil.copytree(ur / "meshes" / "ur5" / "visual", tmp_path / "meshes")
    (tmp_path / "meshes" / "broken.stl").write_bytes(b"\0" * 80 + (1000).to_bytes(4, "little") + b"\1" * 500)
    text = (ur / "urdf" / "ur5_robot.urdf").read_text()
    text = re.sub(r'package://example-robot-data/robots/ur_description/meshes/ur5/visual/', "meshes/", text)
    text = text.replace('"meshes/forearm.dae"', '"meshes/gone.dae"').replace('"meshes/wrist1.dae"',
                                                                             '"meshes/broken.stl"')
    (tmp_path / "ur5.urdf").write_text(text)
    import dynlib

    model = dynlib.load(tmp_path / "ur5.urdf")
    write_trajectory(tmp_path / "m.csv", column_names(model.q_names, model.v_names, ("q",)),
                     np.column_stack([[0.0, 1.0], np.tile(model.q_neutral, (2, 1))]))
    r = run("view", tmp_path / "ur5.urdf", tmp_path / "m.csv", "-o", tmp_path / "p.html")
    warnings = [ln for ln in r.output.splitlines() if "warning" in ln]
    assert len(warnings) == 2 and all("placeholder box" in w for w in warnings), r.output
    assert any("forearm_link" in w and "gone.dae" in w for w in warnings)
    assert any("wrist_1_link" in w and "broken.stl" in w for w in warnings)
    opened = Opened(browser, (tmp_path / "p.html").as_uri())
    opened.check_clean()
    assert opened.js("() => document.getElementById('dyn-status').textContent") == ""
    assert count_meshes(opened) == {"meshes": len(model.visuals), "empty": 0}
    opened.screenshot(str(tmp_path / "placeholders.png"))
    opened.close()
