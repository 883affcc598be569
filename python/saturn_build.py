"""A PEP 517 build backend in the standard library only, for `pip install ./python`
without a network: it packs the modules that pyproject.toml lists
([tool.saturn_build] modules) into a pure-Python wheel, with the [project]
name, version and description. Editable installs (`pip install -e ./python`)
get a .pth file pointing at this folder.
"""
import base64
import hashlib
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "py3-none-any"


def _config():
    """[project] strings and [tool.saturn_build] modules from pyproject.toml (a
    small reader: tomllib is only in Python 3.11+)."""
    try:
        import tomllib

        with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
            data = tomllib.load(f)
        project = data["project"]
        modules = data["tool"]["saturn_build"]["modules"]
        return project["name"], project["version"], project.get("description", ""), modules
    except ImportError:
        text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()

        def field(name):
            m = re.search(r'^%s\s*=\s*"([^"]*)"' % name, text, re.M)
            return m.group(1) if m else ""

        modules = re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"',
                             re.search(r"^modules\s*=\s*\[([^\]]*)\]", text, re.M).group(1))
        return field("name"), field("version"), field("description"), modules


def _dist(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata(name, version, description):
    return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            f"Summary: {description}\nRequires-Python: >=3.8\n")


def _write_wheel(directory, files):
    name, version, description, _ = _config()
    dist = f"{_dist(name)}-{version}"
    info = f"{dist}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata(name, version, description).encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: saturn_build\n"
                              f"Root-Is-Purelib: true\nTag: {TAG}\n").encode()
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{dist}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return wheel


def _modules():
    _, _, _, modules = _config()
    found = [m for m in modules if os.path.exists(os.path.join(HERE, m + ".py"))]
    if not found:
        raise RuntimeError(f"{HERE}: none of the modules {modules} is there")
    return found


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for m in _modules():
        with open(os.path.join(HERE, m + ".py"), "rb") as f:
            files[m + ".py"] = f.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name, _, _, _ = _config()
    return _write_wheel(wheel_directory, {f"_{_dist(name)}_editable.pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    name, version, _, _ = _config()
    base = f"{_dist(name)}-{version}"
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        for f in ["pyproject.toml", "saturn_build.py"] + [m + ".py" for m in _modules()]:
            tar.add(os.path.join(HERE, f), arcname=f"{base}/{f}")
    return os.path.basename(path)
