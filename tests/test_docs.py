"""The repository speaks of the product as it is: no work-history words in any tracked text file
(history lives in git and CHANGELOG.md), and every relative link in the markdown resolves."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEXT_SUFFIXES = {".md", ".py", ".cpp", ".h", ".cu", ".inc", ".toml", ".txt", ".sh", ".cfg",
                 ".yml", ".yaml", ".json", ".csv", ""}
# Words of a work log, not of a manual: a numbered stop or issue, the word for a sitting, a
# commit's hash.
HISTORY = re.compile(r"\bstops? \d+|\bissues? #?\d+|\bses" r"sions?\b|\bcommit [0-9a-f]{7,40}\b",
                     re.IGNORECASE)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def tracked_text_files():
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    paths = [ROOT / p for p in listed if Path(p).suffix in TEXT_SUFFIXES]
    return [p for p in paths if p.is_file() and b"\0" not in p.read_bytes()[:4096]]


def history_words(text):
    """(line number, match) for each work-history word in text."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in HISTORY.finditer(text)]


def broken_links(markdown_path):
    """The relative links of a markdown file whose target does not exist."""
    broken = []
    for target in LINK.findall(markdown_path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in the same file
        path = target.split("#", 1)[0]
        if path and not (markdown_path.parent / path).exists():
            broken.append(target)
    return broken


def test_history_words_are_found():
    """The check itself: it finds a planted work-history word and passes clean text."""
    stop, issue, sitting = "st" + "op 3", "iss" + "ue 12", "ses" + "sion"  # kept out of this file
    assert history_words(f"fixed in {stop}, see {issue}\n{sitting} notes") == [
        (1, stop), (1, issue), (2, sitting)]
    assert history_words("a stop-gap; the issue width; 3 stops") == []


def test_no_history_words_in_tracked_files():
    found = []
    for path in tracked_text_files():
        if path.resolve() == Path(__file__).resolve():
            continue  # this file names the words it forbids
        for line, word in history_words(path.read_text(encoding="utf-8", errors="replace")):
            found.append(f"{path.relative_to(ROOT)}:{line}: {word!r}")
    assert not found, "work-history words (history belongs in git and CHANGELOG.md):\n" + \
        "\n".join(found)


def test_relative_links_resolve():
    found = [f"{p.relative_to(ROOT)}: {t}" for p in tracked_text_files() if p.suffix == ".md"
             for t in broken_links(p)]
    assert not found, "links to files that do not exist:\n" + "\n".join(found)


PUBLIC_CALLABLES = ["gelu", "bias_gelu", "geglu", "geglu_packed", "GELU", "BiasGELU", "GEGLU",
                    "replace_gelu"]


@pytest.mark.parametrize("name", PUBLIC_CALLABLES)
def test_docstring_example_runs(name):
    """Every public function and module documents itself with an example, which runs and prints
    what its docstring says."""
    import doctest

    import gelu_ext

    obj = getattr(gelu_ext, name)
    assert name in gelu_ext.__all__ and name in (gelu_ext.__doc__ or ""), \
        f"gelu_ext.{name} is missing from the package's docstring or __all__ (help(gelu_ext))"
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, name) if t.examples]
    assert tests, f"gelu_ext.{name} has no example in its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"gelu_ext.{name}'s docstring example failed (output above)"
