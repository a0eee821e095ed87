"""Where FCL's data files are: the prelude.

In a checkout the prelude is `prelude/prelude.fcl` at the top of the
repository; an installed wheel carries the same file as package data of
`fcl.prelude_data` (pyproject.toml maps that package to `prelude/`).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from fcl.base.errors import EnvironmentProblem

PRELUDE_NAME = "prelude.fcl"


def prelude_path() -> Path:
    """The path of prelude.fcl: the installed package data, else the checkout's file.

    Raises EnvironmentProblem when neither exists (a broken installation).
    """
    try:
        installed = resources.files("fcl.prelude_data") / PRELUDE_NAME
        if installed.is_file():
            return Path(str(installed))
    except ModuleNotFoundError:
        pass
    checkout = Path(__file__).resolve().parents[2] / "prelude" / PRELUDE_NAME
    if checkout.is_file():
        return checkout
    raise EnvironmentProblem(f"the FCL prelude ({PRELUDE_NAME}) is missing from this "
                             "installation: reinstall with `pip install .`")


def user_cache(*parts: str) -> str:
    """A folder under FCL's cache in the user's cache folder ($XDG_CACHE_HOME, else ~/.cache),
    or under $FCL_CACHE_DIR where that is set (not created here)."""
    import os
    root = os.environ.get("FCL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fcl")
    return os.path.join(root, *parts)
