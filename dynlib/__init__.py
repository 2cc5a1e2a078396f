"""dynlib: rigid-body dynamics of URDF robots (the library behind the `dyn` command).

    import dynlib
    model = dynlib.load("robots/arm6.urdf")
    tau = dynlib.rnea(model, q, v, a)

Importing dynlib is cheap: the compiled kernels load on first use.
"""
from importlib import import_module

__version__ = "0.1.0"

_PUBLIC = {
    "load": "files.urdf",
    "Model": "core.model",
    "Data": "core.model",
    "rnea": "algorithms.rnea",
    "nonlinear_effects": "algorithms.rnea",
    "gravity_torques": "algorithms.rnea",
    "rnea_derivatives": "algorithms.derivatives",
    "aba_derivatives": "algorithms.derivatives",
    "crba": "algorithms.crba",
    "aba": "algorithms.aba",
    "coupled_rnea": "algorithms.mimic",
    "coupled_crba": "algorithms.mimic",
    "coupled_aba": "algorithms.mimic",
    "forward_dynamics": "algorithms.forward",
    "coriolis_matrix": "algorithms.coriolis",
    "frame_placement": "algorithms.kinematics",
    "frame_jacobian": "algorithms.jacobians",
    "frame_jacobian_dot_times_v": "algorithms.jacobians",
    "task_space_inertia": "algorithms.task_space",
    "kinetic_energy": "algorithms.energy",
    "potential_energy": "algorithms.energy",
    "center_of_mass": "algorithms.inertia_box",
    "integrate": "algorithms.configuration",
    "difference": "algorithms.configuration",
    "random_configuration": "algorithms.configuration",
    "simulate": "sim.simulate",
    "ExternalWrench": "sim.simulate",
    "load_scenario": "runs.scenario",
    "run_scenario": "runs.scenario",
    "inverse_dynamics_trajectory": "motion.inverse",
    "joint_friction_torques": "motion.inverse",
    "contact_inverse_dynamics": "motion.contact_id",
    "energy_check": "runs.checks",
    "plan_sweep": "runs.sweep",
    "run_sweep": "runs.sweep",
    "read_trajectory": "files.trajectory",
    "write_trajectory": "files.trajectory",
    "read_gain": "files.gains",
    "write_gain": "files.gains",
    "regressor": "algorithms.regressor",
    "inertial_parameters": "algorithms.regressor",
    "identify": "motion.identification",
    "excitation": "motion.identification.excite",
    "write_view": "runs.view",
}

__all__ = sorted(_PUBLIC) + ["errors", "__version__"]


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value
        return value
    if name == "errors":
        return import_module(".errors", __name__)
    raise AttributeError(f"module 'dynlib' has no attribute {name!r}")
