"""dynlib.simulate: rows, recorded quantities (their identities with the other kernels),
external wrenches, divergence, chunking, input checks."""
import math

import numpy as np
import pytest

import dynlib
from dynlib.sim.controllers import PD, Constant
from dynlib.errors import InputError, NumericalError
from dynlib.sim.simulate import ExternalWrench, SimulationResult, simulate
from dynlib.files.trajectory import read_trajectory
from helpers import sample

Q0 = np.array([0.2, -0.6, 0.8, -0.4, 0.3, 0.1])
PD_ARM6 = PD(kp=[400, 600, 300, 30, 20, 10], kd=[72, 86, 25, 1.0, 0.4, 0.08], target=np.zeros(6))


def test_rows_are_every_kth_step_from_zero():
    r = simulate(sample("pendulum"), [0.3], dt=0.01, steps=10, every=3)
    assert isinstance(r, SimulationResult) and len(r) == 4
    assert np.array_equal(r.time, np.array([0, 3, 6, 9]) * 0.01)
    full = simulate(sample("pendulum"), [0.3], dt=0.01, steps=10)
    assert len(full) == 11 and full.time[-1] == pytest.approx(0.1, abs=1e-15)
    assert np.array_equal(r.q, full.q[::3]) and np.array_equal(r.a, full.a[::3])
    assert np.array_equal(r.q_final, full.q[-1])


@pytest.mark.parametrize("friction_integration", ["implicit", "explicit"])
def test_qdd_column_gives_back_tau_through_inverse_dynamics(friction_integration):
    # the qdd of a row is the model's acceleration at that row's state, so that
    # motor torque = rnea(q, qd, qdd) + damping qd + friction tanh(qd / eps) (SPEC §2)
    model = sample("arm6")
    dt = 1e-3 if friction_integration == "implicit" else 1e-4
    r = simulate(model, Q0, dt=dt, steps=300, controller=PD_ARM6, friction_integration=friction_integration)
    assert r.diverged is None and np.abs(r.tau).max() > 1.0
    D, F = model.arrays.damping, model.arrays.friction
    tau = dynlib.rnea(model, r.q, r.v, r.a) + D * r.v + F * np.tanh(r.v / 1e-3)
    assert np.allclose(tau, r.tau, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("joint_friction, friction_integration", [(False, "implicit"), (True, "explicit")])
def test_qdd_column_gives_back_tau_with_the_pd_gains_alone_implicit(joint_friction, friction_integration):
    # semi-implicit, no implicit joint friction: the row records the implicit stage's own acceleration,
    # M a + h = tau_applied + friction, without a second ABA (dynlib.sim.dynamics.IMPLICIT_GAINS)
    model = sample("arm6")
    r = simulate(model, Q0, dt=1e-4, steps=300, integrator="semi-implicit", controller=PD_ARM6,
                 joint_friction=joint_friction, friction_integration=friction_integration)
    assert r.diverged is None and np.abs(r.tau).max() > 1.0
    D, F = (model.arrays.damping, model.arrays.friction) if joint_friction else (0.0, 0.0)
    tau = dynlib.rnea(model, r.q, r.v, r.a) + D * r.v + F * np.tanh(r.v / 1e-3)
    assert np.allclose(tau, r.tau, rtol=1e-9, atol=1e-9)
    explicit = simulate(model, Q0, dt=1e-4, steps=300, integrator="semi-implicit", controller=PD_ARM6,
                        joint_friction=joint_friction, friction_integration=friction_integration,
                        gain_integration="explicit")
    assert np.abs(r.a - explicit.a).max() > 0  # the gains were taken implicitly


def test_energy_columns_match_the_energy_kernels():
    model = sample("arm7")
    r = simulate(model, dt=1e-3, steps=200, every=20)
    assert np.allclose(r.energy[:, 0], dynlib.kinetic_energy(model, r.q, r.v), rtol=1e-13, atol=1e-13)
    assert np.allclose(r.energy[:, 1], dynlib.potential_energy(model, r.q), rtol=1e-13, atol=1e-13)
    assert np.array_equal(r.energy[:, 2], r.energy[:, 0] + r.energy[:, 1])
    assert simulate(model, dt=1e-3, steps=2, energy=False).energy is None


def test_runs_with_and_without_energy_share_one_loop():
    # the energy of the rows is data (Rows.energy has no rows when not asked): one compiled loop, which
    # links the energy kernels, runs both
    from dynlib.sim.simulate import _run

    model = sample("arm7")
    for energy in (False, True):
        simulate(model, dt=1e-3, steps=2, energy=energy)
    assert len(_run.overloads) == 1
    cres = next(iter(_run.overloads.values()))
    assert any("kinetic_kernel" in f.name for f in cres.library._get_module_for_linking().functions)


def test_joint_friction_can_be_switched_off_and_its_smoothing_set():
    model = sample("arm6")
    v0 = np.full(6, 0.002)
    on = simulate(model, Q0, v0, dt=1e-4, steps=1, friction_integration="explicit")
    off = simulate(model, Q0, v0, dt=1e-4, steps=1, joint_friction=False)
    wide = simulate(model, Q0, v0, dt=1e-4, steps=1, friction_smoothing=0.1, friction_integration="explicit")
    D, F = model.arrays.damping, model.arrays.friction
    for res, eps, scale in ((on, 1e-3, 1.0), (wide, 0.1, 1.0), (off, 1.0, 0.0)):
        passive = scale * (-D * v0 - F * np.tanh(v0 / eps))
        assert np.allclose(res.a[0], dynlib.aba(model, Q0, v0, passive), rtol=1e-12, atol=1e-10)


def test_damping_dissipates_energy():
    model = sample("arm6").with_gravity([0, 0, 0])
    r = simulate(model, Q0, np.ones(6), dt=1e-3, steps=1000)
    E = r.energy[:, 2]
    assert np.all(np.diff(E) <= 1e-12) and E[-1] < 0.1 * E[0]


def test_external_wrench_is_the_jacobian_transpose_of_a_world_aligned_wrench():
    # (f, tau) in world-aligned axes at the frame origin: generalized force J^T w with the
    # local_world_aligned frame Jacobian (the contact-wrench convention of SPEC §7)
    model = sample("arm7")
    rng = np.random.default_rng(4)
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    w = np.array([3.0, -2.0, 5.0, 0.7, -0.4, 0.9])
    for frame in ("flange", "link4_cover"):
        r = simulate(model, q, v, dt=1e-3, steps=1, joint_friction=False,
                     external_wrenches=[ExternalWrench(frame, tuple(w))])
        J = dynlib.frame_jacobian(model, q, frame, reference="local_world_aligned")
        assert np.allclose(r.a[0], dynlib.aba(model, q, v, J.T @ w), rtol=1e-11, atol=1e-11)


def test_external_wrench_acts_only_inside_its_window():
    model = sample("arm6")
    push = [ExternalWrench("tool0", (0, 30, 0, 0, 0, 0), start=0.05, stop=0.08)]
    r = simulate(model, Q0, dt=1e-3, steps=100, controller=PD_ARM6, external_wrenches=push, energy=False)
    still = simulate(model, Q0, dt=1e-3, steps=100, controller=PD_ARM6, energy=False)
    moved = np.abs(r.q - still.q).max(axis=1)
    assert np.all(moved[:50] == 0.0)  # the substep at t + dt = start already feels it: row 50 is the first change
    assert moved[51] > 0 and moved[80] > 1e-4
    dicts = simulate(model, Q0, dt=1e-3, steps=100, controller=PD_ARM6, energy=False,
                     external_wrenches=[{"frame": "tool0", "wrench": (0, 30, 0, 0, 0, 0), "start": 0.05, "stop": 0.08}])
    assert np.array_equal(dicts.q, r.q)


def test_divergence_stops_keeps_the_finite_rows_and_says_where():
    model = sample("pendulum")
    r = simulate(model, [0.1], dt=1e-3, steps=1000, controller=Constant([1e5]), max_state=1e3,
                 limits=False)  # unsaturated: 1e5 N·m (its effort limit is 100)
    assert r.diverged is not None
    k = r.diverged.step
    assert 0 < k < 1000 and r.diverged.time == pytest.approx(k * 1e-3)
    assert "max_state" in r.diverged.reason
    assert len(r) == k  # rows 0 .. k-1, the last finite states
    assert np.all(np.isfinite(r.q)) and np.abs(r.v).max() <= 1e3
    err = r.error()
    assert isinstance(err, NumericalError) and err.exit_code == 1 and err.step == k
    assert f"step {k}" in str(err)
    assert simulate(model, [0.1], dt=1e-3, steps=10).error() is None


def test_nan_is_caught_as_divergence():
    # explicit friction on arm6 at dt = 1e-3 is unstable (see test_integrators): it must end in a
    # reported divergence, never in NaN rows
    r = simulate(sample("arm6"), Q0, dt=1e-3, steps=5000, friction_integration="explicit", max_state=1e300,
                 limits=False)  # (a held limit would slow the blow-up's joints)
    assert r.diverged is not None and "not finite" in r.diverged.reason
    assert len(r) == r.diverged.step and np.all(np.isfinite(r.q)) and np.all(np.isfinite(r.a))


def test_chunked_run_with_progress_is_identical_and_reports_progress():
    model = sample("double_pendulum")
    seen = []
    chunked = simulate(model, [1.0, 0.5], dt=1e-3, steps=3000, every=7, progress=lambda d, n: seen.append((d, n)))
    whole = simulate(model, [1.0, 0.5], dt=1e-3, steps=3000, every=7)
    assert np.array_equal(chunked.q, whole.q) and np.array_equal(chunked.energy, whole.energy)
    assert len(seen) > 10 and seen[-1] == (3000, 3000)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:]))


def test_simulate_takes_its_options_as_keywords_of_the_options_record():
    # simulate(model, q0, v0, *, dt, steps, **options): the options are the fields of Options, with its defaults;
    # a keyword that is not one is a TypeError naming it, as for any Python function
    import dataclasses

    from dynlib.sim.simulate import Options

    assert {f.name for f in dataclasses.fields(Options)} == {
        "integrator", "controller", "external_wrenches", "joint_friction", "friction_smoothing",
        "friction_integration", "every", "max_state", "energy", "contacts", "progress", "gain_integration", "limits"}
    model = sample("double_pendulum")
    r = simulate(model, [1.0, 0.5], dt=1e-3, steps=10)
    assert r.integrator == Options().integrator and r.every == 1 and r.energy is not None
    with pytest.raises(TypeError, match="unexpected keyword argument 'integrater'"):
        simulate(model, dt=1e-3, steps=10, integrater="euler")


def test_result_writes_a_trajectory_file(tmp_path):
    model = sample("quadruped", True)
    r = simulate(model, dt=1e-3, steps=20, every=5)
    path = tmp_path / "t.parquet"
    r.write(path, ("q", "qd", "qdd", "tau", "energy"))
    traj = read_trajectory(path)
    assert traj.names[:9] == ["time", "q.root.x", "q.root.y", "q.root.z", "q.root.qx", "q.root.qy", "q.root.qz",
                              "q.root.qw", "q.lf_haa"]
    assert traj.names[-3:] == ["energy.kinetic", "energy.potential", "energy.total"]
    assert [n for n in traj.names if n.startswith("tau.root")] == [f"tau.root.{c}" for c in
                                                                  ("fx", "fy", "fz", "tx", "ty", "tz")]  # SPEC §5
    assert np.array_equal(traj.columns([f"q.{n}" for n in model.q_names]), r.q)
    df = r.to_dataframe()
    assert df.shape == (5, 1 + model.nq + 3 * model.nv + 3)


@pytest.mark.parametrize("kwargs, message", [
    (dict(q0=[0.0] * 5), "q0 must have 6 entries"),
    (dict(v0=[0.0, math.nan, 0, 0, 0, 0]), "v0 has a non-finite value"),
    (dict(dt=0.0), "dt must be a positive"),
    (dict(dt=-1e-3), "dt must be a positive"),
    (dict(steps=0), "steps must be a positive integer"),
    (dict(steps=2.5), "steps must be a positive integer"),
    (dict(integrator="rk5"), "integrator must be one of euler, semi-implicit, rk4"),
    (dict(every=0), "every must be a positive integer"),
    (dict(friction_smoothing=0), "friction_smoothing"),
    (dict(friction_integration="both"), "friction_integration"),
    (dict(external_wrenches=[ExternalWrench("tol0", (0,) * 6)]), "did you mean 'tool0'"),
    (dict(external_wrenches=[ExternalWrench("base_link", (0,) * 6)]), "fixed to the world"),
    (dict(external_wrenches=[ExternalWrench("tool0", (0,) * 3)]), "six finite numbers"),
    (dict(external_wrenches=[ExternalWrench("tool0", (0,) * 6, 1.0, 0.5)]), "must be after start"),
    (dict(controller="pd"), "controller must be"),
])
def test_bad_arguments_are_input_errors_naming_them(kwargs, message):
    args = dict(q0=None, v0=None, dt=1e-3, steps=10)
    args.update(kwargs)
    with pytest.raises(InputError, match=message):
        simulate(sample("arm6"), args.pop("q0"), args.pop("v0"), **args)


def test_contacts_dict_takes_the_given_keys_and_the_models_defaults():
    from dynlib.sim.contact import MODELS, build
    from dynlib.sim.contact.points import ContactSpec
    from dynlib.sim.contact.soft import SoftParams

    model = sample("quadruped", True)
    q = model.q_neutral.copy()
    q[2] = 0.36
    pts = [{"frame": f, "offset": (0, 0, -0.02)} for f in ("lf_foot", "rf_foot", "lh_foot", "rh_foot")]
    c = build(model, {"model": "soft", "points": pts, "stiffness": 2e4}, q)
    assert c.params == SoftParams(stiffness=2e4) and c.params.damping == SoftParams().damping
    assert set(SoftParams._fields) == {"stiffness", "damping", "friction", "slip_velocity"}
    # the keys each model reads are its parameter tuple's fields
    assert set(MODELS["unilateral"]._fields) == {"friction", "tolerance", "max_iterations", "penetration_correction"}
    by_dict = simulate(model, q, dt=1e-3, steps=50, contacts={"model": "soft", "points": pts, "stiffness": 2e4,
                                                             "ground": {"height": 0.01}})
    by_spec = simulate(model, q, dt=1e-3, steps=50, contacts=ContactSpec("soft", pts, height=0.01, stiffness=2e4))
    assert np.array_equal(by_dict.q, by_spec.q) and np.array_equal(by_dict.contact_force, by_spec.contact_force)
    assert by_dict.contact_names == ("lf_foot", "rf_foot", "lh_foot", "rh_foot")


@pytest.mark.parametrize("contacts, message", [
    ({"points": "from-collision"}, "model must be one of soft, bilateral, unilateral, relaxed"),
    ({"model": "sticky"}, "model must be one of"),
    ({"model": "soft", "stifness": 1.0}, "unknown key 'stifness'"),
    ({"model": "soft", "stiffness": "hard"}, "stiffness must be a number"),
    ({"model": "unilateral", "max_iterations": 2.5}, "max_iterations must be a finite integer"),
    ({"model": "soft", "ground": {"normal": (0, 0, 0)}}, "ground normal must be a nonzero vector"),
    ({"model": "soft", "ground": 0.1}, "ground must be a dict"),
    ({"model": "relaxed"}, "set integrator to 'semi-implicit'"),
    ("soft", "contacts must be a dict or a ContactSpec"),
])
def test_bad_contacts_are_input_errors(contacts, message):
    with pytest.raises(InputError, match=message):
        simulate(sample("quadruped", True), dt=1e-3, steps=2, contacts=contacts)


def test_bad_arguments_say_which_argument_they_came_from():
    model = sample("quadruped", True)
    for kwargs, argument in (({"contacts": {"model": "sticky"}}, "contacts"),
                             ({"contacts": {"model": "relaxed"}}, "contacts"),  # raised in dynlib.simulate
                             ({"controller": PD(kp=[1, 2])}, "controller"),
                             ({"external_wrenches": [ExternalWrench("no_such_frame", (0,) * 6)]},
                              "external_wrenches")):
        with pytest.raises(InputError) as e:
            simulate(model, dt=1e-3, steps=2, **kwargs)
        assert e.value.argument == argument
    with pytest.raises(InputError) as e:
        simulate(model, dt=-1.0, steps=2)
    assert e.value.argument is None  # the message names it


def test_loop_is_cached_answers_whether_the_one_loop_is_compiled(tmp_path):
    import pickle

    import numba

    from dynlib._numba.cache import cache_folders, index_holds
    from dynlib.sim.simulate import _run, loop_is_cached

    model = sample("double_pendulum")
    simulate(model, [0.3, 0.1], dt=1e-3, steps=5, controller=PD(10.0, 1.0))
    assert loop_is_cached()
    index = next(f for folder in cache_folders() for f in folder.glob("simulate._run-*.nbi"))
    assert index_holds(index, _run)
    with open(index, "rb") as f:
        pickle.load(f)
        stamp, overloads = pickle.loads(f.read())
    # an index of another numba version, or one that lists no compilation, does not hold the loop
    for version, listed in (("0.0.0", overloads), (numba.__version__, {})):
        other = tmp_path / index.name
        with open(other, "wb") as f:
            pickle.dump(version, f)
            f.write(pickle.dumps((stamp, listed)))
        assert not index_holds(other, _run)


def test_loop_is_cached_looks_in_dyns_cache_only(tmp_path, monkeypatch):
    import importlib
    import shutil

    from dynlib._numba.cache import cache_folders
    from dynlib._numba.folder import cache_folder

    S = importlib.import_module("dynlib.sim.simulate")  # the module (dynlib.simulate is the function)
    model = sample("double_pendulum")
    simulate(model, [0.3, 0.1], dt=1e-3, steps=5)
    index = next(f for folder in cache_folders() for f in folder.glob("simulate._run-*.nbi"))
    # numba's own place next to the source (where dyn's kernels were once cached) holds the loop ...
    numba_place = tmp_path / "tree" / "__pycache__"
    numba_place.mkdir(parents=True)
    shutil.copy(index, numba_place / index.name)
    monkeypatch.setattr(S, "__file__", str(tmp_path / "tree" / "simulate.py"))
    # ... but dyn's cache folder is an empty one: the loop is not cached
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path / "cache"))
    assert not S.loop_is_cached()
    cache_folder().mkdir(parents=True)
    shutil.copy(index, cache_folder() / index.name)
    assert S.loop_is_cached()


@pytest.mark.parametrize("integrator", ["semi-implicit", "euler"])
def test_implicit_step_is_the_dense_backward_euler_solve(integrator):
    """One step with URDF damping and friction, a PD's implicit gains and armature: the ABA stage's
    acceleration is (M + dt B + dt kd + dt² kp)^-1 (tau - D v - F tanh(v/eps) - dt kp v - h), M from CRBA."""
    model = sample("arm6").with_armature([0.02, 0.02, 0.01, 0.005, 0.005, 0.001])
    dt, eps, v0 = 1e-3, 1e-3, np.array([0.3, -0.2, 0.001, 0.5, -0.002, 1.0])
    r = simulate(model, Q0, v0, dt=dt, steps=1, integrator=integrator, controller=PD_ARM6, friction_smoothing=eps,
                 limits=False)  # the PD law unsaturated (shoulder_lift's 360 N·m exceeds its effort 150)
    D, F = model.arrays.damping, model.arrays.friction
    kp, kd = np.array(PD_ARM6.kp), np.array(PD_ARM6.kd)
    B = D + F / eps * (1 - np.tanh(v0 / eps) ** 2)
    M = dynlib.crba(model, Q0) + np.diag(dt * B + dt * kd + dt * dt * kp)
    rhs = kp * (0 - Q0) - kd * v0 - D * v0 - F * np.tanh(v0 / eps) - dt * kp * v0 - dynlib.nonlinear_effects(model, Q0, v0)
    a = np.linalg.solve(M, rhs)
    v1 = v0 + dt * a
    q1 = Q0 + dt * (v1 if integrator == "semi-implicit" else v0)
    np.testing.assert_allclose(r.v[1], v1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r.q[1], q1, rtol=1e-12, atol=1e-12)


def test_armature_energy_is_conserved_and_counted():
    """Free motion with rotor inertias: the recorded energy (½ armature v² included) is conserved by rk4;
    the same run's energy without the rotors' share is not."""
    model = sample("arm6").with_gravity([0, 0, -9.81]).with_armature(0.05)
    r = simulate(model, Q0, np.ones(6), dt=1e-3, steps=500, joint_friction=False)
    E = r.energy[:, 2]
    assert np.abs(E - E[0]).max() < 1e-6 * abs(E).max()
    rotors = 0.5 * 0.05 * (r.v ** 2).sum(axis=1)
    assert np.ptp(rotors) > 1e3 * np.abs(E - E[0]).max()


def test_the_table_is_the_blocks_side_by_side_column_major():
    """`SimulationResult.table` is np.hstack of time, q, qd, qdd, tau (energy) exactly, laid out column-major:
    the writer takes its columns without a transposed copy (issue 36, the whole `dyn simulate` command)."""
    model = sample("double_pendulum")
    r = simulate(model, [0.3, 0.1], dt=1e-3, steps=50)
    names, data = r.table(("q", "qd", "qdd", "tau", "energy"))
    assert np.array_equal(data, np.hstack([r.time[:, None], r.q, r.v, r.a, r.tau, r.energy]))
    assert data.flags.f_contiguous and len(names) == data.shape[1]
