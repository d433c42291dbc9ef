"""Where YAML reads a comment: outside every scalar. Comments that carry meaning for overlap-cli (``# overlap:
ignore[...]`` suppressions, ``# overlap: target ...`` directives) count only there, so ``name: "x # overlap:
ignore[TP102]"`` is a string, not a suppression."""

from __future__ import annotations


def scalar_spans(text: str) -> list:
    """Character spans of the scalars in ``text``, so that a ``#`` inside a string is not a comment."""
    from overlap_cli.config.yamlnodes import loader_class, pyyaml

    yaml = pyyaml()

    spans = []
    loader = loader_class()(text)
    try:
        while True:
            tok = loader.get_token()
            if tok is None:
                break
            if isinstance(tok, yaml.ScalarToken):
                spans.append((tok.start_mark.index, tok.end_mark.index))
    except yaml.YAMLError:
        pass  # the loader reports the error; directives before it still count
    finally:
        loader.dispose()
    return spans
