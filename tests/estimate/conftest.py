import pytest

from overlap_cli.frameworks.bridge import recipes as catalog


@pytest.fixture
def recipe_file(tmp_path):
    """recipe_file(NAME) -> the path of a file holding Bridge's recipe NAME as its serializer writes it."""

    def write(name: str) -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(catalog.text(name))
        return str(path)

    return write
