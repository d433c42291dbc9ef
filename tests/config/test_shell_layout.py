"""The bash reader's shape: an evaluator that dispatches each node of the command tree to one function, and
modules a reader can take in whole (a docstring saying what each holds, none over 500 lines, no class
assembled from mixins)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from overlap_cli.config import shell_eval, shell_tree
from overlap_cli.config.shell import read_launch_script
from overlap_cli.config.shell_lex import Lexer

CONFIG = Path(shell_eval.__file__).resolve().parent
SHELL_MODULES = sorted(CONFIG.glob("shell*.py"))


def test_the_shell_modules_are_found():
    names = {p.stem for p in SHELL_MODULES}
    assert {"shell", "shell_eval", "shell_values", "shell_expand", "shell_commands", "shell_assign",
            "shell_loops", "shell_source", "shell_inner", "shell_paths", "shell_tree"} <= names


def test_each_shell_module_says_what_it_holds_and_is_short():
    for path in SHELL_MODULES:
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text))
        assert doc and len(doc.split()) >= 10, f"{path.name}: no docstring saying what it holds"
        assert len(text.splitlines()) <= 500, f"{path.name}: {len(text.splitlines())} lines"


def test_no_shell_class_is_assembled_from_several_bases():
    for path in SHELL_MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                assert len(node.bases) <= 1, f"{path.name}: class {node.name} has bases {len(node.bases)}"
    assert shell_eval.Reader.__mro__ == (shell_eval.Reader, Lexer, object)


def test_every_node_kind_has_one_handler():
    kinds = {cls for _, cls in inspect.getmembers(shell_tree, inspect.isclass)
             if issubclass(cls, shell_tree.Node) and cls is not shell_tree.Node}
    assert len(kinds) == 12
    assert set(shell_eval.HANDLERS) == kinds
    assert all(callable(f) for f in shell_eval.HANDLERS.values())


def test_a_child_reading_places_its_words_on_the_line_that_runs_it():
    """A ``bash -c`` string is read by a child reader whose positions are the script's: the string's
    ``--num-layers`` value, written on line 2 of the script, is reported there."""
    text = 'L=8\nCMD="torchrun pretrain_gpt.py --num-layers $L"\nexport L\nsrun bash -c "$CMD"\n'
    found = read_launch_script("job.sh", text)
    tokens = [(t.text, t.line) for t in found.tokens]
    assert ("--num-layers", 2) in tokens
    assert ("8", 2) not in tokens  # $L's value comes from line 1, not from where the string uses it
    assert any(t.text == "8" and t.line == 1 for t in found.tokens)
