"""Print the project's Python dependencies (runtime and dev), one per line, from pyproject.toml.

The Makefile pipes them into pip so the environment is installed before maturin builds the
extension once, in release mode.
"""

import tomllib
from pathlib import Path

project = tomllib.loads(Path(__file__).resolve().parents[1].joinpath("pyproject.toml").read_text())[
    "project"
]
for requirement in project["dependencies"] + project["optional-dependencies"]["dev"]:
    print(requirement)
