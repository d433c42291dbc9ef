"""The ``recipe_file`` fixture of tests/estimate (a module of its own: a conftest.py here would shadow the
top-level one that other test modules import by name)."""

import pytest

from overlap_cli.frameworks.bridge import recipes as catalog


@pytest.fixture
def recipe_file(tmp_path):
    """recipe_file(NAME) -> the path of a file holding Bridge's recipe NAME as its serializer writes it."""

    def write(name: str) -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(catalog.text("0.6.2", name))
        return str(path)

    return write
