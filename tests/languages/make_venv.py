#!/usr/bin/env python3
"""Make (or reuse) the venv of the language tests.

    python3 make_venv.py VENV_DIR REQUIREMENTS [INTEROP_REQUIREMENTS]

Creates VENV_DIR with `python3 -m venv` and installs REQUIREMENTS with pip --no-deps
(every package is pinned there). A marker file records what was installed; when it
matches, nothing is done, so later ctest runs need no network. When INTEROP_REQUIREMENTS
is given, the numpy pins of both files must agree.
"""
import os
import shutil
import subprocess
import sys


def pins(path):
    result = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, version = line.partition("==")
                if not version:
                    sys.exit(f"{path}: '{line}' is not pinned with ==")
                result[name.strip().lower()] = version.strip()
    return result


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    venv, requirements = sys.argv[1], sys.argv[2]
    wanted = pins(requirements)
    if len(sys.argv) == 4:
        other = pins(sys.argv[3])
        if "numpy" in other and other["numpy"] != wanted.get("numpy"):
            sys.exit(f"numpy pins differ: {requirements} has {wanted.get('numpy')}, "
                     f"{sys.argv[3]} has {other['numpy']}")

    python = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, "requirements.installed")
    text = "".join(f"{k}=={v}\n" for k, v in sorted(wanted.items()))
    text += f"python {sys.version.split()[0]}\n"
    if os.path.exists(python) and os.path.exists(marker):
        with open(marker) as f:
            if f.read() == text:
                print(f"{venv}: up to date")
                return
    print(f"{venv}: installing {', '.join(f'{k}=={v}' for k, v in sorted(wanted.items()))}", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                    "--no-deps", "-r", requirements], check=True, stdin=subprocess.DEVNULL)
    with open(marker, "w") as f:
        f.write(text)
    print(f"{venv}: ready")


if __name__ == "__main__":
    main()
