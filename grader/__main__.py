"""`python -m grader`: the command line, or one line naming a package that is not installed.

A package missing here almost always means the kit's virtual environment is not active, so
the message names the package, why the grader needs it and how to get it, instead of a
traceback.
"""

from __future__ import annotations

import sys

# Import name -> (what pip installs, what the grader needs it for).
REQUIRED_PACKAGES = {
    "rich": ("rich", "the tables and messages of every command"),
    "torch": ("torch", "running and comparing the exercises' code"),
    "numpy": ("numpy", "torch's conversions to and from arrays"),
    "pytest": ("pytest", "running the tests"),
    "nbformat": ("nbformat", "reading notebooks"),
    "nbconvert": ("nbconvert", "showing submitted notebooks to staff"),
    "yaml": ("pyyaml", "reading Gradescope's export metadata"),
    "copydetect": ("copydetect", "the code similarity report of batch"),
    "tomli": ("tomli", "reading assignment.toml on Python 3.10"),
}


def missing_package_message(error: ModuleNotFoundError) -> str | None:
    """One line saying what to install and why, when `error` is about a required package."""
    top = (error.name or "").partition(".")[0]
    if top not in REQUIRED_PACKAGES:
        return None
    package, purpose = REQUIRED_PACKAGES[top]
    return (
        f"error: the package {package} is not installed for {sys.executable} (the grader "
        f"needs it for {purpose}). Activate the kit's virtual environment (source "
        ".venv/bin/activate; on Windows .venv\\Scripts\\activate), or install the kit into "
        "this Python from the kit's folder: python -m pip install -c constraints.txt -e ."
    )


def run() -> int:
    try:
        from grader.cli import main

        return main()
    except ModuleNotFoundError as error:
        message = missing_package_message(error)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(run())
