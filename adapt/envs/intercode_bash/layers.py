"""The read-only layers every InterCode-Bash sandbox starts from, prepared once.

Under the cache directory (default ``~/.cache/adapt/intercode-bash``, ``ADAPT_BASH_CACHE_DIR``)::

    v<N>/usr/        the tools: the files of InterCode's image packages and their dependencies,
                     hard-linked from the host's /usr (``usr.py``)
    v<N>/skeleton/   the root without the tools: bin -> usr/bin style links as on the host, an
                     empty /usr (the usr layer is overlaid there at run time), an /etc built from
                     an allow-list of the host's files plus our own hosts/hostname/resolv.conf,
                     /root, /tmp, /var/log, ... and InterCode's /.gitignore
    v<N>/fs1 .. fs4/ what the task set's setup script (from the data directory) wrote on top of
                     the skeleton, run in a sandbox at prepare time; plus a copy of the script
    v<N>/fs<k>.json  the manifest: every path ``git status`` would track in that file system
                     (regular files and symlinks outside the ignore list) with its kind, mode
                     and content hash, i.e. InterCode's initial commit

Preparing is idempotent: a layer whose ``<layer>.ready`` stamp matches the script's hash is kept.
It is safe to prepare from several processes at once (workers starting together): ``prepare``
holds an exclusive ``flock`` on ``v<N>/.lock`` while it checks and builds, and each layer is built
in a uniquely named temporary folder next to it, then renamed into place before its stamp is
written, so a layer is either absent or whole.
The tools come from the host's packages: ``prepare`` checks that the Debian packages InterCode's
image installs are present, names the ``apt-get install`` command when they are not, and links
their files (with their dependencies') into the ``/usr`` layer.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from adapt.envs.intercode_bash.atomic import building, write_atomic
from adapt.envs.intercode_bash.changes import Manifest, build_manifest
from adapt.envs.intercode_bash.sandbox import HOSTNAME, Sandbox, check_sandbox, require_tools
from adapt.envs.intercode_bash.usr import build_usr, closure
from adapt.envs.processes import minimal_environment
from adapt.errors import UserError

logger = logging.getLogger(__name__)

#: bump when the layout of the layers changes (old versions are left for ``prepare`` to remove)
LAYOUT_VERSION = 1
#: the four task sets' file systems
FILE_SYSTEMS = (1, 2, 3, 4)
#: the packages InterCode's nl2bash image installs (``nl2bash.Dockerfile``), Debian names
IMAGE_PACKAGES = (
    "bash", "python3", "psmisc", "bsdmainutils", "cron", "imagemagick", "dnsutils", "git",
    "tree", "net-tools", "iputils-ping", "coreutils", "curl", "cpio", "jq",
)
#: the ignore file InterCode commits at / (``docker.gitignore``)
GITIGNORE = (
    "# Folders\nbin\nboot\ndev\netc\nhome\nlib\nmedia\nopt\nproc\nroot\nrun\nsbin\nsrv\nsys\n"
    "usr\nvar\n\n# Files\n.dockerenv"
)
#: files and folders of the host's /etc the tools read (never secrets: no shadow, ssh, ssl keys)
ETC_ALLOW = (
    "alternatives", "bash.bashrc", "bash_completion", "bindresolvport", "ca-certificates",
    "ca-certificates.conf", "debian_version", "default", "environment", "ethertypes", "fonts",
    "gai.conf", "ghostscript", "gitconfig", "group", "host.conf", "ImageMagick-6", "inputrc",
    "issue", "issue.net", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias",
    "locale.gen", "localtime", "login.defs", "magic", "magic.mime", "mime.types", "networks",
    "nsswitch.conf", "os-release", "passwd", "profile", "profile.d", "protocols", "python3",
    "python3.11", "rpc", "services", "shells", "skel", "ssl", "terminfo", "timezone", "ucf.conf",
    "wgetrc", "cron.d", "cron.daily", "crontab", "bindresvport.blacklist",
)
#: what is never copied from an allowed folder
ETC_DENY = ("private", "shadow", "gshadow")
_ETC_OWN = {
    "hostname": f"{HOSTNAME}\n",
    "hosts": (f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
              f"127.0.1.1\t{HOSTNAME}\n"),
    "resolv.conf": "nameserver 127.0.0.1\n",
    "mtab": None,  # a link to /proc/self/mounts
}
_ROOT_DIRS = ("boot", "dev", "home", "media", "mnt", "opt", "proc", "root", "run", "srv", "sys",
              "tmp", "usr", "var/log", "var/tmp", "var/lib", "var/cache", "var/spool/cron",
              "var/mail", "var/opt", "var/local")


def default_cache_dir() -> Path:
    """``~/.cache/adapt/intercode-bash`` (``ADAPT_BASH_CACHE_DIR`` overrides it, through the
    environment's settings)."""
    return Path.home() / ".cache" / "adapt" / "intercode-bash"


def setup_script(data_dir: Path, fs: int) -> Path:
    return data_dir / f"setup_nl2b_fs_{fs}.sh"


@dataclass(frozen=True, slots=True)
class Layers:
    """The prepared layers of one file system."""

    fs: int
    skeleton: Path
    fs_layer: Path
    manifest: Manifest
    #: the ``/usr`` layer (the image's packages)
    usr: Path = Path("/usr")

    @property
    def stack(self) -> tuple[Path, Path]:
        """Lower layers, topmost first (what :class:`Sandbox` takes)."""
        return (self.fs_layer, self.skeleton)


def missing_packages(packages: Iterable[str] = IMAGE_PACKAGES) -> list[str]:
    """The Debian packages of ``packages`` that are not installed on the host."""
    dpkg_query = shutil.which("dpkg-query")
    if dpkg_query is None:
        return []  # not Debian: trust the host (the gold tests show what is missing)
    missing = []
    for pkg in packages:
        res = subprocess.run([dpkg_query, "-W", "-f=${Status}", pkg], capture_output=True,
                             text=True, check=False, env=minimal_environment())
        if "install ok installed" not in res.stdout:
            missing.append(pkg)
    return missing


def _stamp(path: Path) -> str | None:
    try:
        return path.with_name(path.name + ".ready").read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _clear_stamp(path: Path) -> None:
    """Forget that ``path`` is ready (before rebuilding it: a crash leaves it not ready)."""
    with contextlib.suppress(FileNotFoundError):
        path.with_name(path.name + ".ready").unlink()


def _write_stamp(path: Path, value: str) -> None:
    write_atomic(path.with_name(path.name + ".ready"), value + "\n")


@contextlib.contextmanager
def _locked(base: Path, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the exclusive lock of the cache folder ``base`` (``flock`` on ``base/.lock``):
    one process (or thread) prepares at a time; the others wait, then find the layers ready."""
    with open(base / ".lock", "a+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("waiting for another process that is preparing the file systems")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            _remove_leftovers(base)
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _remove_leftovers(base: Path) -> None:
    """Temporary folders of a preparation that was killed (only called under the lock)."""
    for entry in base.iterdir():
        if entry.name.startswith(".") and (".tmp-" in entry.name or ".old-" in entry.name):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()


def _build_skeleton(target: Path) -> None:
    with building(target) as tmp:
        _fill_skeleton(tmp)


def _fill_skeleton(tmp: Path) -> None:
    tmp.mkdir()
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / name
        if host.is_symlink():
            (tmp / name).symlink_to(os.readlink(host))
    for d in _ROOT_DIRS:
        (tmp / d).mkdir(parents=True, exist_ok=True)
    os.chmod(tmp / "tmp", 0o1777)
    os.chmod(tmp / "var/tmp", 0o1777)
    os.chmod(tmp / "root", 0o700)
    etc = tmp / "etc"
    etc.mkdir()
    for name in ETC_ALLOW:
        src = Path("/etc") / name
        if not (src.exists() or src.is_symlink()):
            continue
        dst = etc / name
        if src.is_symlink() or src.is_file():
            shutil.copy2(src, dst, follow_symlinks=False)
        elif src.is_dir():
            shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(*ETC_DENY),
                            ignore_dangling_symlinks=True)
    for name, text in _ETC_OWN.items():
        if text is None:
            (etc / name).symlink_to("../proc/self/mounts")
        else:
            (etc / name).write_text(text, encoding="utf-8")
    (tmp / "root" / ".bashrc").write_text("", encoding="utf-8")
    (tmp / ".gitignore").write_text(GITIGNORE, encoding="utf-8")


def _build_fs(skeleton: Path, usr: Path, target: Path, script: Path, timeout: float) -> None:
    """Run ``script`` at / over the skeleton; the upper layer it leaves becomes the fs layer.
    A script that fails (non-zero exit status, as a Docker build's ``RUN`` would) or runs out
    of time raises a :class:`UserError` naming it, with the end of its output."""
    text = script.read_bytes()
    name = script.name
    with Sandbox([skeleton], timeout=timeout, usr=usr) as sandbox:
        result = sandbox.run(
            f"cat > /{name} <<'ADAPT_SETUP_EOF'\n{text.decode('utf-8')}\nADAPT_SETUP_EOF\n"
            f"chmod +x /{name} && /{name}", cwd="/")
        tail = "\n".join(result.text.rstrip().splitlines()[-10:])
        shown = f"; the end of its output:\n{tail}" if tail else " (it printed nothing)"
        if result.timed_out:
            raise UserError(f"intercode_bash: preparing {target.name}: the setup script {name} "
                            f"did not finish in {timeout:g}s{shown}")
        if result.exit_code != 0:
            why = ("its output passed the size limit" if result.truncated
                   else f"it exited with status {result.exit_code}")
            raise UserError(f"intercode_bash: preparing {target.name}: the setup script {name} "
                            f"({script}) failed: {why}{shown}")
        with building(target) as tmp:
            shutil.copytree(sandbox.upper, tmp, symlinks=True)
    logger.debug("intercode_bash: setup output of %s: %s", name, result.text[-2000:])


def prepare(
    data_dir: str | Path,
    cache_dir: str | Path | None = None,
    *,
    file_systems: Iterable[int] = FILE_SYSTEMS,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    check_packages: bool = True,
) -> dict[int, Layers]:
    """Prepare (or reuse) the layers of ``file_systems``; return them by number."""
    require_tools()
    data = Path(data_dir).expanduser()
    if check_packages:
        missing = missing_packages()
        if missing:
            raise UserError(
                "intercode_bash: the tasks expect the tools of InterCode's image; install the "
                f"missing packages with `apt-get install -y {' '.join(missing)}`"
            )
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    base = root / f"v{LAYOUT_VERSION}"
    base.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _msg: None)
    numbers = list(file_systems)
    for fs in numbers:
        if fs not in FILE_SYSTEMS:
            raise UserError(f"intercode_bash: no file system {fs}; use 1, 2, 3 or 4")
        script = setup_script(data, fs)
        if not script.is_file():
            raise UserError(
                f"intercode_bash: no setup script {script}; give the InterCode-Bash data "
                "directory (holding setup_nl2b_fs_1.sh ... and nl2bash_fs_1.json ...)"
            )
    with _locked(base, say):
        return _prepare_locked(data, base, numbers, force, say)


def _prepare_locked(data: Path, base: Path, numbers: list[int], force: bool,
                    say: Callable[[str], None]) -> dict[int, Layers]:
    built = 0
    skeleton = base / "skeleton"
    skel_stamp = hashlib.sha256(
        (GITIGNORE + repr(ETC_ALLOW) + repr(_ROOT_DIRS) + repr(_ETC_OWN)).encode()).hexdigest()
    if force or _stamp(skeleton) != skel_stamp:
        say("building the skeleton root")
        _clear_stamp(skeleton)
        _build_skeleton(skeleton)
        _write_stamp(skeleton, skel_stamp)
        built += 1
    else:
        say("skeleton root: ready")
    usr = base / "usr"
    packages = closure(IMAGE_PACKAGES)
    usr_stamp = hashlib.sha256(repr(packages).encode()).hexdigest()
    if force or _stamp(usr) != usr_stamp:
        say(f"linking the tools of {len(packages)} packages into the /usr layer")
        _clear_stamp(usr)
        build_usr(usr, IMAGE_PACKAGES)
        _write_stamp(usr, usr_stamp)
        built += 1
    else:
        say("/usr layer: ready")
    check_sandbox([skeleton], usr)  # namespaces allowed here? (before any setup script)
    out: dict[int, Layers] = {}
    for fs in numbers:
        script = setup_script(data, fs)
        layer = base / f"fs{fs}"
        manifest_file = base / f"fs{fs}.json"
        stamp = hashlib.sha256(script.read_bytes() + (skel_stamp + usr_stamp).encode()
                               ).hexdigest()
        if force or _stamp(layer) != stamp or not manifest_file.is_file():
            say(f"file system {fs}: running {script.name}")
            _clear_stamp(layer)
            _build_fs(skeleton, usr, layer, script, timeout=120.0)
            manifest = build_manifest([layer, skeleton])
            write_atomic(manifest_file, json.dumps(manifest.to_json()))
            _write_stamp(layer, stamp)
            built += 1
        else:
            say(f"file system {fs}: ready")
        manifest = Manifest.from_json(json.loads(manifest_file.read_text(encoding="utf-8")))
        out[fs] = Layers(fs=fs, skeleton=skeleton, fs_layer=layer, manifest=manifest, usr=usr)
    if not built:
        say("everything was prepared already: nothing to do")
    return out


def load_prepared(cache_dir: str | Path | None, fs: int) -> Layers | None:
    """The layers of ``fs`` as prepared earlier, or ``None`` (no data directory needed)."""
    base = (Path(cache_dir).expanduser() if cache_dir else default_cache_dir()) / \
        f"v{LAYOUT_VERSION}"
    skeleton, layer, manifest_file = base / "skeleton", base / f"fs{fs}", base / f"fs{fs}.json"
    usr = base / "usr"
    if (_stamp(skeleton) is None or _stamp(layer) is None or _stamp(usr) is None
            or not manifest_file.is_file()):
        return None
    manifest = Manifest.from_json(json.loads(manifest_file.read_text(encoding="utf-8")))
    return Layers(fs=fs, skeleton=skeleton, fs_layer=layer, manifest=manifest, usr=usr)
