"""A folder inside a git work tree is walked as git sees it: what .gitignore ignores is left out and said in
one line; outside a work tree, or with --all-files, nothing is left out for it."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings

import pytest

from chunkwise.cli import main
from chunkwise.formats import SkippedFilesWarning, collect_inputs
from chunkwise.formats.gitignore import GitIgnore, work_tree


def _write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def project(tmp_path):
    """A package after `pip install -e .`: its egg-info (an empty dependency_links.txt) beside the sources."""
    root = tmp_path / "proj"
    (root / ".git" / "info").mkdir(parents=True)
    _write(
        root,
        {
            ".gitignore": "*.egg-info/\n/build/\n*.log\n__pycache__/\n",
            "src/__pycache__/a.pyc": "x",
            "src/pkg/__pycache__/core.pyc": "x",
            "src/pkg/core.py": "def lamp():\n    return 'on'\n",
            "src/pkg.egg-info/dependency_links.txt": "\n",
            "src/pkg.egg-info/PKG-INFO": "Name: pkg\n",
            "src/notes.log": "started\n",
            "build/readme.md": "# Built\n\nA copy.\n",
            "README.md": "# Readme\n\nThe lamp is on.\n",
        },
    )
    return root


def _sources(paths, **kw) -> tuple[list[str], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = collect_inputs([str(p) for p in paths], **kw)
    said = [str(w.message) for w in caught if issubclass(w.category, SkippedFilesWarning)]
    return sorted(f.source for f in found if f.error is None), said


def test_chunk_code_of_an_installed_package_skips_its_egg_info(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["chunk", "src", "--code", "--format", "jsonl"]) == 0
    out, err = capsys.readouterr()
    assert "pkg/core.py" in out and "egg-info" not in out and "notes.log" not in out
    lines = [line for line in err.splitlines() if ".gitignore" in line]
    assert lines == [  # a name found twice is said once, with its count
        "chunkwise: warning: skipped 3 folders and 1 file that .gitignore ignores: __pycache__/ (2), "
        "pkg.egg-info/, notes.log (--no-gitignore reads them)"
    ]
    assert "error" not in err
    # --all-files reads every file, the ignored ones too (and the empty one is an error line)
    assert main(["chunk", "src", "--code", "--all-files", "--format", "jsonl"]) == 1
    out, err = capsys.readouterr()
    assert "dependency_links.txt" in err and "PKG-INFO" in out and ".gitignore" not in err


def test_the_skipped_line_joins_the_unsupported_types(project):
    (project / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    sources, said = _sources([project / "src"])
    assert [s.rsplit("/", 1)[-1] for s in sources] == []  # .py needs --code; the rest is ignored or a PNG
    assert len(said) == 1
    assert said[0].startswith("skipped 2 files of unsupported types: .png 1, .py 1; 1 of them source code")
    assert "3 folders and 1 file that .gitignore ignores: __pycache__/ (2), pkg.egg-info/, notes.log" in said[0]


def test_rules_from_every_level_deeper_ones_winning(tmp_path):
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("secret.md\n", encoding="utf-8")
    _write(
        root,
        {
            ".gitignore": "*.md\n!keep.md\ndocs/drafts/\n",
            "a.md": "a",
            "keep.md": "k",
            "secret.md": "s",
            "a.txt": "t",
            "docs/.gitignore": "!*.md\nkeep.md\n",
            "docs/b.md": "b",
            "docs/keep.md": "k",
            "docs/drafts/c.txt": "c",
            "docs/drafts/.gitignore": "!c.txt\n",  # a file in an ignored folder cannot be taken back
        },
    )
    sources, said = _sources([root])
    rel = sorted(s.split("repo/", 1)[1] for s in sources)
    assert rel == ["a.txt", "docs/b.md", "keep.md"]
    assert said == [
        "skipped 1 folder and 3 files that .gitignore ignores: a.md, secret.md, docs/drafts/, docs/keep.md "
        "(--no-gitignore reads them)"
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_walk_takes_what_git_lists(tmp_path):
    """The same tree and rules through git itself: the files `git ls-files --others --exclude-standard`
    lists are the files the walk takes."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    _write(
        root,
        {
            ".gitignore": "/out/\n**/tmp\n*.txt\n!important.txt\nnotes/*.md\n!notes/index.md\n",
            "a.md": "a",
            "b.txt": "b",
            "important.txt": "i",
            "out/x.md": "x",
            "sub/out/y.md": "y",
            "sub/tmp/z.md": "z",
            "sub/tmp.md": "t",
            "notes/index.md": "n",
            "notes/other.md": "o",
            "notes/deep/d.md": "d",
            "sub/.gitignore": "y.md\n",
            "sub/out/w.md": "w",
        },
    )
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    expected = sorted(p for p in listed if not p.rsplit("/", 1)[-1].startswith("."))
    sources, _ = _sources([root])
    assert sorted(s.split("repo/", 1)[1] for s in sources) == expected
    assert "sub/out/w.md" in expected and "b.txt" not in expected  # the tree exercises both outcomes


def test_outside_a_work_tree_or_naming_an_ignored_folder_leaves_nothing_out(project, tmp_path):
    plain = tmp_path / "plain"
    _write(plain, {".gitignore": "*.md\n", "a.md": "# A\n\nText.\n"})
    if work_tree(str(plain)) is not None:
        pytest.skip("the temporary folder is inside a git work tree here")
    sources, said = _sources([plain])
    assert len(sources) == 1 and not said
    # a folder git ignores, named on the command line, is read: naming it is the user's intent
    assert GitIgnore(str(project)).ignored(str(project / "build"), is_dir=True)
    sources, said = _sources([project / "build"])
    assert [s.rsplit("/", 1)[-1] for s in sources] == ["readme.md"] and not said


def test_a_line_git_cannot_read_is_dropped_with_one_warning(tmp_path, capsys, monkeypatch):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    _write(root, {".gitignore": "!\n*.log\n\\\n[z-a]\n", "a.md": "# A\n\nText.\n", "b.log": "x\n"})
    monkeypatch.chdir(tmp_path)
    assert main(["chunk", "proj", "--format", "jsonl"]) == 0  # the valid lines still apply
    out, err = capsys.readouterr()
    assert "proj/a.md" in out and "b.log" not in out
    bad = [line for line in err.splitlines() if "not a valid pattern" in line]
    assert [line.split(": ", 2)[2].split(" is not")[0] for line in bad] == [
        "proj/.gitignore line 1: '!'",
        "proj/.gitignore line 3: '\\\\'",
        "proj/.gitignore line 4: '[z-a]'",
    ]
    assert "Traceback" not in err and "b.log" in err  # said as ignored


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_bad_lines_are_dropped_as_git_drops_them(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    _write(root, {".gitignore": "!\n*.txt\n\\\n[z-a]\n!keep.txt\n", "a.md": "a", "b.txt": "b", "keep.txt": "k"})
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    expected = sorted(p for p in listed if not p.startswith("."))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sources, _ = _sources([root])
    assert sorted(s.split("repo/", 1)[1] for s in sources) == expected == ["a.md", "keep.txt"]


def test_walking_a_folder_of_repositories_applies_each_ones_rules(tmp_path, capsys, monkeypatch):
    src = tmp_path / "src"
    for name in ("one", "two"):
        (src / name / ".git").mkdir(parents=True)
    _write(
        src,
        {
            "one/.gitignore": "build/\n",
            "one/README.md": "# One\n\nText.\n",
            "one/build/copy.md": "# Copy\n\nText.\n",
            "two/.gitignore": "*.txt\n",
            "two/notes.md": "# Two\n\nText.\n",
            "two/out.txt": "generated\n",
            "loose/build/kept.md": "# Kept\n\nOutside any repository.\n",
        },
    )
    if work_tree(str(src)) is not None:
        pytest.skip("the temporary folder is inside a git work tree here")
    sources, said = _sources([src])
    assert sorted(s.split("src/", 1)[1] for s in sources) == ["loose/build/kept.md", "one/README.md", "two/notes.md"]
    assert said == [
        "skipped 1 folder and 1 file that .gitignore ignores: one/build/, two/out.txt (--no-gitignore reads them)"
    ]
    monkeypatch.chdir(tmp_path)
    assert main(["chunk", "src", "--format", "jsonl"]) == 0
    out, _ = capsys.readouterr()
    assert "copy.md" not in out and "out.txt" not in out and "kept.md" in out


def test_a_folder_whose_files_are_all_ignored_says_so_and_no_gitignore_reads_them(project, capsys, monkeypatch):
    _write(project, {"logs/a.log": "started\n", "logs/b.log": "stopped\n"})
    monkeypatch.chdir(project)
    assert main(["chunk", "build", "logs", "--format", "jsonl"]) == 1  # build/ named: read
    out, err = capsys.readouterr()
    assert "Built" in out
    errors = [line for line in err.splitlines() if "error" in line]
    assert errors == [
        "chunkwise: error: logs: directory has no readable files that .gitignore does not ignore "
        "(--no-gitignore reads what it ignores)"
    ]
    (project / "src" / "pkg.egg-info" / "dependency_links.txt").write_text("pkg\n", encoding="utf-8")
    assert main(["chunk", ".", "--no-gitignore", "--format", "jsonl"]) == 0
    out, err = capsys.readouterr()
    got = {json.loads(line)["source"].removeprefix("./") for line in out.splitlines()}
    # what .gitignore ignores is read; the other walk rules (supported types only) still apply
    assert got == {
        "README.md",
        "build/readme.md",
        "logs/a.log",
        "logs/b.log",
        "src/notes.log",
        "src/pkg.egg-info/dependency_links.txt",
        "src/pkg.egg-info/PKG-INFO",
    }
    assert ".gitignore" not in err and "pyc" in err  # the compiled files are still skipped by type


def test_index_and_index_add_take_no_gitignore(project, tmp_path, capsys, monkeypatch):
    from conftest import FakeEmbedder

    import chunkwise.embeddings
    from chunkwise.retrieval.index import Index
    from chunkwise.store.memory import MemoryStore

    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    monkeypatch.chdir(tmp_path)
    assert main(["index", str(project), "--tokenizer", "words", "--db", "a.db"]) == 0
    _, err = capsys.readouterr()
    assert "chunkwise: 1 documents (1 indexed" in err, err  # README.md
    # README, build/readme.md, notes.log, PKG-INFO; the empty dependency_links.txt is an error line
    assert main(["index", str(project), "--tokenizer", "words", "--db", "b.db", "--no-gitignore"]) == 1
    _, err = capsys.readouterr()
    assert "chunkwise: 4 documents (4 indexed" in err and "dependency_links.txt: no text" in err, err
    with Index(store=MemoryStore(), embedder=FakeEmbedder()) as index, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert index.add([project], strategy="recursive").documents == 1
        assert index.add([project], strategy="recursive", gitignore=False).documents == 4
