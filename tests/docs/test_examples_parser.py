"""The console-block reader of the docs test: commands, continuations, markers, wildcards."""

from __future__ import annotations

import pytest
from tests.docs.examples import output_matches, parse_blocks, variables_before

PAGE = """# A page

```console
$ W=../shared/wmt22
```

<!-- docs-test: slow exit-code: trains a model -->
```console
$ evalab score -r a \\
    -i b
line 1
$ evalab score -r missing
evalab: error: missing: no such file
```

```text
$ not run
```

```console
$ echo hi
hi
```
"""


def test_commands_outputs_markers_and_variables(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    blocks = parse_blocks(page)
    assert [b.modes for b in blocks] == [set(), {"slow", "exit-code"}, set()]
    first, failing = blocks[1].commands
    assert first.script == "evalab score -r a \\\n    -i b"
    assert first.expected == ["line 1"] and first.expected_exit == 0
    assert failing.expected_exit == 2
    assert blocks[2].commands[0].script == "echo hi"
    assert list(variables_before(blocks, blocks[2].commands[0])) == ["W=../shared/wmt22"]


@pytest.mark.parametrize(
    "marker", ["<!-- docs-test: sloww -->", "<!-- docs-test slow -->", "<!-- docs-test: SLOW -->"]
)
def test_a_misspelt_marker_is_an_error_not_a_silent_exact_block(tmp_path, marker):
    page = tmp_path / "page.md"
    page.write_text(f"{marker}\n```console\n$ true\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="docs-test"):
        parse_blocks(page)


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a", "b"], ["a", "b  ", ""], True),
        (["a", "b"], ["a", "c"], False),
        (["a", "..."], ["a", "x", "y"], True),
        (["a", "...", "z"], ["a", "z"], True),
        (["a", "...", "z"], ["a", "x", "y"], False),
        (["took ... s; done"], ["took 1.8 s; done"], True),
        (["took ... s; done"], ["took 1.8 s; failed"], False),
        (["a"], ["a", "extra"], False),
        (["[x] (y)"], ["[x] (y)"], True),
    ],
)
def test_output_matching_with_wildcards(expected, actual, ok):
    assert output_matches(expected, actual) is ok
