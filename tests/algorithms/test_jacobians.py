"""dynlib.algorithms.jacobians: frame Jacobians and J̇v in the three references.

J against central differences of the frame placements (q ⊕ ±ε e_k through
dynlib.integrate, so free-flyer configurations work), J̇v against central differences
of J(q ⊕ ±ε v) v, frames fixed to the world, the batch dimension and argument checks.
The placements the Jacobians differentiate are checked here too, against the
closed forms and reference postures of the sample robots.
"""
import numpy as np
import pytest
from hypothesis import given

import dynlib
from dynlib.errors import InputError
from helpers import SQRT_EPS, adjoint, assert_close, basis, erd_path, few, random_state, sample, se3_log, seeds

REFERENCES = ("local", "world", "local_world_aligned")
FD_TOL = SQRT_EPS


def moving_frames(model):
    return [f for f in range(model.nframes) if model.arrays.frame_body[f] >= 0]


def fd_jacobians(model, q, frame, eps=1e-6):
    """{reference: J} from the central differences log(T(q ⊕ -ε e_k)^-1 T(q ⊕ ε e_k)) / 2ε."""
    nv = model.nv
    E = np.array([basis(nv, k) for k in range(nv)])
    Tp = dynlib.frame_placement(model, dynlib.integrate(model, np.tile(q, (nv, 1)), eps * E), frame)
    Tm = dynlib.frame_placement(model, dynlib.integrate(model, np.tile(q, (nv, 1)), -eps * E), frame)
    local = np.column_stack([se3_log(np.linalg.inv(Tm[k]) @ Tp[k]) / (2 * eps) for k in range(nv)])
    T = dynlib.frame_placement(model, q, frame)
    R, p = T[:3, :3], T[:3, 3]
    return {"local": local, "world": adjoint(R, p) @ local, "local_world_aligned": adjoint(R, np.zeros(3)) @ local}


@few(4)
@given(seed=seeds())
def test_jacobians_match_finite_differences_of_placements(model, seed):
    q, _, _ = random_state(model, np.random.default_rng(seed))
    for f in moving_frames(model):
        fd = fd_jacobians(model, q, f)
        for ref in REFERENCES:
            assert_close(dynlib.frame_jacobian(model, q, f, ref), fd[ref], FD_TOL, f"J {ref} (FD)",
                         f"frame {model.frame_names[f]}")


@few(4)
@given(seed=seeds())
def test_jacobian_dot_times_v_matches_finite_differences(model, seed):
    """J̇v = (J(q ⊕ εv) - J(q ⊕ -εv)) v / 2ε, in every reference."""
    q, v, _ = random_state(model, np.random.default_rng(seed))
    eps = 1e-5
    Qpm = dynlib.integrate(model, np.array([q, q]), np.array([eps * v, -eps * v]))
    for f in moving_frames(model):
        for ref in REFERENCES:
            Jp, Jm = dynlib.frame_jacobian(model, Qpm, f, ref)
            fd = (Jp - Jm) @ v / (2 * eps)
            assert_close(dynlib.frame_jacobian_dot_times_v(model, q, v, f, ref), fd, FD_TOL, f"Jdot v {ref} (FD)",
                         f"frame {model.frame_names[f]}")


@few(4)
@given(seed=seeds())
def test_references_are_related_by_the_frame_placement(model, seed):
    """LOCAL = blockdiag(Rᵀ, Rᵀ) LWA and WORLD = Ad(R, p) LOCAL, for J and J̇v."""
    q, v, _ = random_state(model, np.random.default_rng(seed))
    for f in moving_frames(model):
        T = dynlib.frame_placement(model, q, f)
        R, p = T[:3, :3], T[:3, 3]
        J = {ref: dynlib.frame_jacobian(model, q, f, ref) for ref in REFERENCES}
        assert_close(J["world"], adjoint(R, p) @ J["local"], 1e-10, "J world = Ad J local")
        assert_close(J["local_world_aligned"], adjoint(R, np.zeros(3)) @ J["local"], 1e-10, "J lwa = R J local")
        # spatial accelerations transform like velocities; the classical one adds w x v
        jdv = {ref: dynlib.frame_jacobian_dot_times_v(model, q, v, f, ref) for ref in REFERENCES}
        assert_close(jdv["world"], adjoint(R, p) @ jdv["local"], 1e-10, "Jdot v world = Ad Jdot v local")
        vl, wl = np.split(J["local"] @ v, 2)
        classical = adjoint(R, np.zeros(3)) @ (jdv["local"] + np.concatenate([np.cross(wl, vl), np.zeros(3)]))
        assert_close(jdv["local_world_aligned"], classical, 1e-10, "Jdot v lwa = R (a + w x v)")


def world_jacobian_from_every_placement(model, q, fid):
    """J (WORLD) assembled from the world placements of every body (frame_placement's full
    pass), column k = oMj.act(S_k) for the DoFs of the bodies from the frame's to the root."""
    a = model.arrays
    J = np.zeros((6, model.nv))
    j = a.frame_body[fid]
    while j >= 0:
        link = model.frame_id(model.body_links[j])
        assert a.frame_body[link] == j
        bMf = np.eye(4)
        bMf[:3, :3], bMf[:3, 3] = a.frame_R[link], a.frame_p[link]
        T = dynlib.frame_placement(model, q, link) @ np.linalg.inv(bMf)  # oMj = oMf fMj
        R, p = T[:3, :3], T[:3, 3]
        for k in range(a.idx_v[j], a.idx_v[j] + a.nvj[j]):
            w = R @ a.S[k, 3:]
            J[:3, k], J[3:, k] = R @ a.S[k, :3] + np.cross(p, w), w
        j = a.parent[j]
    return J


def check_path_jacobians(model, seed):
    rng = np.random.default_rng(seed)
    q, _, _ = random_state(model, rng)
    other, _, _ = random_state(model, rng)
    for f in moving_frames(model):
        expected = world_jacobian_from_every_placement(model, q, f)
        dynlib.frame_placement(model, other, f)  # the workspace holds every body's placement at another q
        assert_close(dynlib.frame_jacobian(model, q, f, "world"), expected, 1e-12,
                     "J from the path's placements vs from every placement", model.frame_names[f])


def test_jacobian_from_the_path_equals_the_one_from_every_body(model):
    """frame_jacobian computes only the placements of the bodies on the frame's path to the
    root: the same J as from every body's placements, whatever the workspace held before."""
    check_path_jacobians(model, 5)


def test_jacobian_from_the_path_on_talos():
    check_path_jacobians(dynlib.load(erd_path("talos_data/robots/talos_reduced.urdf"), floating_base=True), 6)


def test_frames_fixed_to_the_world_do_not_move():
    model = sample("arm6")
    q, v, _ = random_state(model, np.random.default_rng(0))
    for ref in REFERENCES:
        assert not np.any(dynlib.frame_jacobian(model, q, "base_link", ref))
        assert not np.any(dynlib.frame_jacobian_dot_times_v(model, q, v, "base_link", ref))


@pytest.mark.parametrize("q", [0.0, 0.7, -2.0])
def test_pendulum_tip(q):
    model = sample("pendulum")
    T = dynlib.frame_placement(model, [q], "tip")
    assert_close(T[:3, 3], [-np.sin(q), 0, -np.cos(q)], 1e-12, "pendulum tip")
    # about y: the tip moves along (-cos q, 0, sin q) per radian
    assert_close(dynlib.frame_jacobian(model, [q], "tip")[:, 0], [-np.cos(q), 0, np.sin(q), 0, 1, 0], 1e-12,
                 "pendulum tip J")


def test_double_pendulum_tip():
    model = sample("double_pendulum")
    for q1, q2 in [(0.3, 0.4), (-1.0, 2.0)]:
        expected = [-np.sin(q1) - np.sin(q1 + q2), 0, -np.cos(q1) - np.cos(q1 + q2)]
        assert_close(dynlib.frame_placement(model, [q1, q2], "tip")[:3, 3], expected, 1e-12, "double pendulum tip")


def test_reference_postures_from_the_robot_files():
    assert_close(dynlib.frame_placement(sample("arm6"), np.zeros(6), "tool0")[:3, 3], [0.81, 0.19, 0.255], 1e-12,
                 "arm6 tool0 at q = 0")
    assert_close(dynlib.frame_placement(sample("arm7"), np.zeros(7), "flange")[:3, 3], [0, 0, 1.285], 1e-12,
                 "arm7 flange at q = 0")
    quad = sample("quadruped")
    stand = np.tile([0.0, 0.8, -1.6], 4)
    for foot, (sx, sy) in {"lf_foot": (1, 1), "lh_foot": (-1, 1), "rf_foot": (1, -1), "rh_foot": (-1, -1)}.items():
        assert_close(dynlib.frame_placement(quad, stand, foot)[:3, 3], [0.2 * sx, 0.22 * sy, -0.348353], 1e-6,
                     "quadruped feet standing")


def test_frame_by_index_equals_frame_by_name(model):
    q, v, _ = random_state(model, np.random.default_rng(1))
    f = model.nframes - 1
    name = model.frame_names[f]
    np.testing.assert_array_equal(dynlib.frame_jacobian(model, q, f), dynlib.frame_jacobian(model, q, name))
    np.testing.assert_array_equal(dynlib.frame_placement(model, q, np.int64(f)), dynlib.frame_placement(model, q, name))


def test_default_reference_is_local_world_aligned(model):
    q, v, _ = random_state(model, np.random.default_rng(2))
    f = model.frame_names[-1]
    np.testing.assert_array_equal(dynlib.frame_jacobian(model, q, f), dynlib.frame_jacobian(model, q, f, "local_world_aligned"))
    np.testing.assert_array_equal(dynlib.frame_jacobian_dot_times_v(model, q, v, f),
                                  dynlib.frame_jacobian_dot_times_v(model, q, v, f, "local_world_aligned"))


def test_batched_calls_equal_row_calls(model):
    rng = np.random.default_rng(17)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, _ = (np.array(x) for x in zip(*states))
    f = model.frame_names[-1]
    T = dynlib.frame_placement(model, Q, f)
    assert T.shape == (3, 4, 4)
    for ref in REFERENCES:
        J, jdv = dynlib.frame_jacobian(model, Q, f, ref), dynlib.frame_jacobian_dot_times_v(model, Q, V, f, ref)
        assert J.shape == (3, 6, model.nv) and jdv.shape == (3, 6)
        for n in range(3):
            np.testing.assert_array_equal(J[n], dynlib.frame_jacobian(model, Q[n], f, ref))
            np.testing.assert_array_equal(jdv[n], dynlib.frame_jacobian_dot_times_v(model, Q[n], V[n], f, ref))
            np.testing.assert_array_equal(T[n], dynlib.frame_placement(model, Q[n], f))


def test_bad_arguments_name_the_argument():
    model = sample("arm6")
    q = np.zeros(6)
    with pytest.raises(InputError, match=r"reference must be one of world, local, local_world_aligned, got 'global'"):
        dynlib.frame_jacobian(model, q, "tool0", "global")
    with pytest.raises(InputError, match=r"reference must be one of"):
        dynlib.frame_jacobian_dot_times_v(model, q, q, "tool0", "LOCAL")
    with pytest.raises(InputError, match=r"no frame \(link\) 'tool1'.*'tool0'"):
        dynlib.frame_jacobian(model, q, "tool1")
    with pytest.raises(InputError, match=r"frame index 99 is out of range"):
        dynlib.frame_placement(model, q, 99)
    with pytest.raises(InputError, match=r"frame index -1 is out of range"):
        dynlib.frame_placement(model, q, -1)
    with pytest.raises(InputError, match=r"^q must have 6 entries"):
        dynlib.frame_jacobian(model, np.zeros(7), "tool0")
    with pytest.raises(InputError, match=r"^v has a non-finite value"):
        dynlib.frame_jacobian_dot_times_v(model, q, [np.nan] * 6, "tool0")
