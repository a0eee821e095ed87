"""Package list for setuptools (the rest of the metadata is in pyproject.toml).

find_packages() picks up every fcl subpackage; the top-level prelude/ folder
is mapped to `fcl.prelude_data` so that prelude.fcl is installed as package data.
"""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["fcl", "fcl.*"]) + ["fcl.prelude_data"],
      package_dir={"fcl.prelude_data": "prelude"})
