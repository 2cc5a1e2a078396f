"""ROS package resolution without ROS (dynlib.files.packages): workspace layouts built in a
temporary folder, the search order, and the messages when a package is not found."""
import os
from pathlib import Path

import pytest

from dynlib.errors import InputError
from dynlib.files.packages import PackageNotFound, Packages, find_package, resolve_uri

NO_ENV = {}


def package(folder, name=None):
    """A package folder: package.xml naming it `name` (default: the folder's name)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.xml").write_text(
        f'<?xml version="1.0"?>\n<package format="3">\n  <name>{name or folder.name}</name>\n'
        "  <version>0.0.1</version>\n</package>\n")
    return folder


@pytest.fixture
def workspace(tmp_path):
    """A catkin/colcon workspace: ws/src/{robot_description, robot_meshes, vendor/arm/arm_description}."""
    src = tmp_path / "ws" / "src"
    desc = package(src / "robot_description")
    (desc / "urdf").mkdir()
    urdf = desc / "urdf" / "robot.urdf"
    urdf.write_text("<robot name='r'/>")
    package(src / "robot_meshes")
    package(src / "vendor" / "arm" / "arm_description")
    package(src / "renamed-folder", name="renamed")
    return urdf


def test_the_package_holding_the_file_and_its_siblings_are_found(workspace):
    src = workspace.parents[2]
    found = Packages(near=workspace, environ=NO_ENV)
    assert found.find("robot_description") == src / "robot_description"
    assert found.find("robot_meshes") == src / "robot_meshes"


def test_a_src_folder_is_searched_at_any_depth(workspace):
    src = workspace.parents[2]
    assert find_package("arm_description", near=workspace, environ=NO_ENV) == src / "vendor" / "arm" / "arm_description"


def test_the_name_in_package_xml_finds_a_folder_named_otherwise(workspace):
    src = workspace.parents[2]
    assert find_package("renamed", near=workspace, environ=NO_ENV) == src / "renamed-folder"
    # and the folder's own name still serves when no package.xml has it (example-robot-data's
    # package.xml says example_robot_descriptions, its URDFs package://example-robot-data)
    assert find_package("renamed-folder", near=workspace, environ=NO_ENV) == src / "renamed-folder"


def test_package_uri_resolves_inside_the_package(workspace):
    src = workspace.parents[2]
    path = resolve_uri("package://robot_meshes/meshes/base%20link.stl", base=workspace, environ=NO_ENV)
    assert path == src / "robot_meshes" / "meshes" / "base link.stl"


def test_user_folders_come_before_the_environment_and_the_workspace(tmp_path, workspace):
    mine = package(tmp_path / "mine" / "robot_meshes")
    env_copy = package(tmp_path / "ros" / "robot_meshes")
    env = {"ROS_PACKAGE_PATH": str(tmp_path / "ros")}
    assert Packages([tmp_path / "mine"], near=workspace, environ=env).find("robot_meshes") == mine
    assert Packages([mine], near=workspace, environ=env).find("robot_meshes") == mine  # DIR may be the package
    assert Packages(near=workspace, environ=env).find("robot_meshes") == env_copy
    assert Packages(near=workspace, environ=NO_ENV).find("robot_meshes") == workspace.parents[2] / "robot_meshes"


def test_ros_package_path_entries_are_searched_in_order(tmp_path):
    a = package(tmp_path / "a" / "deep" / "pkg")
    b = package(tmp_path / "b" / "pkg")
    env = {"ROS_PACKAGE_PATH": os.pathsep.join([str(tmp_path / "b"), str(tmp_path / "a")])}
    assert find_package("pkg", environ=env) == b
    env = {"ROS_PACKAGE_PATH": os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")])}
    assert find_package("pkg", environ=env) == a


def test_ament_prefix_share_folders(tmp_path):
    prefix = tmp_path / "install" / "my_robot"
    shared = package(prefix / "share" / "my_robot_description")
    env = {"AMENT_PREFIX_PATH": os.pathsep.join([str(tmp_path / "elsewhere"), str(prefix)])}
    assert find_package("my_robot_description", environ=env) == shared


def test_ament_index_markers(tmp_path):
    """A package registered in the ament index, its share folder without a package.xml."""
    prefix = tmp_path / "prefix"
    index = prefix / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    (index / "robot-data").touch()
    (prefix / "share" / "robot-data").mkdir()
    package(tmp_path / "decoy" / "robot-data")  # a folder name only: the registered package wins
    env = {"AMENT_PREFIX_PATH": str(prefix), "ROS_PACKAGE_PATH": str(tmp_path / "decoy")}
    assert find_package("robot-data", environ=env) == tmp_path / "decoy" / "robot-data"  # its package.xml names it
    (tmp_path / "decoy" / "robot-data" / "package.xml").unlink()
    assert find_package("robot-data", environ=env) == prefix / "share" / "robot-data"


def test_ignored_folders_are_skipped(tmp_path):
    package(tmp_path / "src" / "pkg")
    (tmp_path / "src" / "pkg" / "COLCON_IGNORE").touch()
    with pytest.raises(PackageNotFound):
        find_package("pkg", package_path=[tmp_path / "src"], environ=NO_ENV)


def test_a_package_is_not_searched_inside(tmp_path):
    outer = package(tmp_path / "outer")
    package(outer / "test" / "inner")
    with pytest.raises(PackageNotFound):
        find_package("inner", package_path=[tmp_path], environ=NO_ENV)


def test_a_folder_with_the_name_serves_when_no_package_xml_names_it(tmp_path):
    """A description downloaded without its package.xml: my_robot/urdf/r.urdf + my_robot/meshes."""
    urdf = tmp_path / "downloads" / "my_robot" / "urdf" / "r.urdf"
    urdf.parent.mkdir(parents=True)
    urdf.write_text("<robot name='r'/>")
    assert find_package("my_robot", near=urdf, environ=NO_ENV) == tmp_path / "downloads" / "my_robot"
    # ... and a folder next to the URDF
    (tmp_path / "downloads" / "my_robot" / "urdf" / "meshes_pkg").mkdir()
    assert find_package("meshes_pkg", near=urdf, environ=NO_ENV) == urdf.parent / "meshes_pkg"


def test_a_package_xml_anywhere_wins_over_a_folder_name_nearby(tmp_path):
    urdf = tmp_path / "a" / "pkg" / "r.urdf"  # folder 'pkg' without package.xml above the file
    urdf.parent.mkdir(parents=True)
    urdf.write_text("<robot name='r'/>")
    real = package(tmp_path / "ros" / "pkg")
    assert Packages(near=urdf, environ={"ROS_PACKAGE_PATH": str(tmp_path / "ros")}).find("pkg") == real


def test_not_found_names_the_package_and_every_place(tmp_path, workspace):
    env = {"ROS_PACKAGE_PATH": str(tmp_path / "ros")}
    with pytest.raises(PackageNotFound) as exc:
        Packages([tmp_path / "mine"], near=workspace, environ=env).find("ghost_description")
    msg = str(exc.value)
    assert "'ghost_description'" in msg
    assert str(tmp_path / "mine") in msg and str(tmp_path / "ros") in msg
    assert "AMENT_PREFIX_PATH (unset)" in msg and str(workspace) in msg and "--package-path" in msg
    assert "\n" not in msg
    assert isinstance(exc.value, InputError)  # exit code 2 on the command line


def test_file_uris_and_plain_paths(tmp_path):
    urdf = tmp_path / "robots" / "r.urdf"
    assert resolve_uri("meshes/a.obj", base=urdf, environ=NO_ENV) == tmp_path / "robots" / "meshes" / "a.obj"
    assert resolve_uri("../shared/a.obj", base=urdf, environ=NO_ENV) == tmp_path / "robots" / ".." / "shared" / "a.obj"
    assert resolve_uri(f"file://{tmp_path}/x/a.dae", base=urdf, environ=NO_ENV) == tmp_path / "x" / "a.dae"
    assert resolve_uri("file://meshes/a.dae", base=urdf, environ=NO_ENV) == tmp_path / "robots" / "meshes" / "a.dae"
    assert resolve_uri(str(tmp_path / "abs.stl"), base=urdf, environ=NO_ENV) == tmp_path / "abs.stl"
    with pytest.raises(InputError, match="nothing is downloaded"):
        resolve_uri("https://example.org/a.stl", base=urdf, environ=NO_ENV)
    with pytest.raises(InputError, match="package://PACKAGE/PATH"):
        resolve_uri("package:///a.stl", base=urdf, environ=NO_ENV)


def test_example_robot_data_meshes_resolve_next_to_their_urdf(erd_path):
    """example-robot-data's URDFs name their meshes package://example-robot-data/...: the
    package.xml above the URDF is found without any setting."""
    urdf = erd_path("ur_description/urdf/ur5_robot.urdf")
    path = resolve_uri("package://example-robot-data/robots/ur_description/meshes/ur5/visual/base.dae",
                       base=urdf, environ=NO_ENV)
    assert path.is_file()


def test_a_xacro_finds_a_package_through_package_path(tmp_path, monkeypatch):
    """$(find pkg) in a xacro, the package in a folder nothing else points at: an error naming it,
    then the robot once `package_path` (dyn view's --package-path) names the folder."""
    import dynlib
    from dynlib.errors import DynError
    from helpers import ROBOTS_DIR

    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    pkg = tmp_path / "elsewhere" / "arm_description"
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "package.xml").write_text("<package><name>arm_description</name></package>")
    (pkg / "urdf" / "arm.urdf.xacro").write_text((ROBOTS_DIR / "arm6.urdf.xacro").read_text())
    top = tmp_path / "robot" / "top.urdf.xacro"
    top.parent.mkdir()
    top.write_text('<?xml version="1.0"?>\n<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="arm6">\n'
                   '  <xacro:include filename="$(find arm_description)/urdf/arm.urdf.xacro"/>\n</robot>\n')
    with pytest.raises(DynError, match="arm_description"):
        dynlib.load(top)
    m = dynlib.load(top, package_path=[tmp_path / "elsewhere"])
    assert m.q_names == dynlib.load(ROBOTS_DIR / "arm6.urdf").q_names
