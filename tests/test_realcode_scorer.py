"""The real-code recall corpus: its labels load, it keeps out of the ecosystem check and the packages
kept aside, and the scorer matches findings to pairs as its README says (no download here)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import ecosystem  # noqa: E402
import realcode  # noqa: E402
from realcode_labels import LABELS, End, LabelError, LabelledFile, NearMiss, Pair, load, load_all  # noqa: E402

KEPT_ASIDE = ROOT.parent / "shared" / "research" / "kept-aside.md"


def _name(spec: str) -> str:
    return re.sub(r"[-_.]+", "-", spec.split("==")[0]).lower()


def test_every_label_file_loads():
    for label_file in sorted(LABELS.glob("*.toml")):
        load(label_file)  # raises LabelError on a malformed label


def test_the_corpus_has_its_size_and_a_quarter_or_more_positive():
    files = load_all()
    packages = {item.spec for item in files}
    assert len(files) >= 230
    assert len(packages) >= 110
    assert sum(realcode.repository(spec) is not None for spec in packages) >= 45
    # negatives measure precision, positives recall: real code rarely carries the bug (README)
    positive = sum(item.positive for item in files)
    # real code rarely carries the bug: the batches read since the fourth are mostly negative files
    assert 0.2 <= positive / len(files) <= 0.65


def test_no_corpus_package_is_in_the_ecosystem_check():
    ecosystem_names = {_name(s) for s in ecosystem.PACKAGES + ecosystem.HELD_OUT}
    assert not {_name(item.spec) for item in load_all()} & ecosystem_names


@pytest.mark.skipif(not KEPT_ASIDE.exists(), reason="../shared is not beside the checkout")
def test_no_corpus_or_ecosystem_package_is_kept_aside():
    text = KEPT_ASIDE.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("Packages on the index:"))
    kept = {_name(n.strip(" .")) for n in line.split(":", 1)[1].split(",")}
    ours = {_name(item.spec) for item in load_all()} | {_name(s) for s in ecosystem.PACKAGES + ecosystem.HELD_OUT}
    assert kept and not kept & ours


def test_a_label_whose_positive_flag_disagrees_with_its_pairs_is_refused(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_text('spec = "x==1"\n[[files]]\npath = "a.py"\npositive = true\n', encoding="utf-8")
    with pytest.raises(LabelError, match="positive = True but 0 required"):
        load(bad)


def test_an_unknown_kind_is_refused(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_text('spec = "x==1"\n[[files]]\npath = "a.py"\npositive = true\n[[files.required]]\n'
                   'holder = 1\nholder_text = "a"\nplacement = 2\nplacement_text = "b"\nkind = "teleport"\n'
                   'tag = "one-scope"\nwhy = "w"\n', encoding="utf-8")
    with pytest.raises(LabelError, match="unknown kind 'teleport'"):
        load(bad)


def _pair(holder: int, placement: int, kind: str, via=()) -> Pair:
    return Pair(End("p/a.py", holder, ""), End("p/a.py", placement, ""), kind, "one-scope", "", tuple(via))


def _finding(line: int, code: str, related=()) -> realcode.Finding:
    return realcode.Finding("p/a.py", line, code, "", tuple(("p/a.py", r) for r in related))


def _item() -> LabelledFile:
    item = LabelledFile("x==1", "p/a.py", True, "")
    item.required = [_pair(10, 12, "move"), _pair(10, 14, "wrap"), _pair(20, 30, "move", via=[25])]
    item.near_misses = [NearMiss(40, "", "loss module")]
    return item


def test_findings_on_a_shared_holder_line_go_to_the_pair_their_placement_names():
    scored = realcode.match(_item(), [_finding(10, "DDP101", [12]), _finding(10, "DDP201", [14])])
    assert set(scored.matched) == {0, 1} and not scored.false


def test_a_second_report_of_one_pair_is_a_false_duplicate():
    scored = realcode.match(_item(), [_finding(10, "DDP101", [12]), _finding(12, "DDP101", [10])])
    assert set(scored.matched) == {0}
    assert [why for _, why in scored.false] == ["duplicate report of a labelled pair"]


def test_a_report_at_a_via_line_counts_and_near_misses_are_false():
    scored = realcode.match(_item(), [_finding(25, "DDP101"), _finding(40, "DDP101"), _finding(50, "DDP101")])
    assert set(scored.matched) == {2}
    assert [why for _, why in scored.false] == ["on a near-miss line", "on no labelled pair"]


def test_a_code_that_cannot_report_the_kind_does_not_match_without_its_placement():
    scored = realcode.match(_item(), [_finding(20, "DDP004")])
    assert not scored.matched and [why for _, why in scored.false] == ["duplicate report of a labelled pair"]


def test_wrap_pairs_count_toward_recall_only_with_ddp201():
    scored = realcode.match(_item(), [_finding(10, "DDP101", [12]), _finding(10, "DDP201", [14])])
    default = realcode.score([scored], realcode.SELECTIONS["default"])
    extended = realcode.score([scored], realcode.SELECTIONS["default+DDP201"])
    assert (default["found"], default["required"], default["true"], default["false"]) == (1, 2, 1, 0)
    assert (extended["found"], extended["required"], extended["true"]) == (2, 3, 2)
    assert extended["by_tag"] == {"one-scope": (2, 3)}


def test_the_package_root_is_the_sdist_top_folder_or_the_wheel_root(tmp_path):
    (tmp_path / "pkg-1.0" / "pkg").mkdir(parents=True)
    (tmp_path / "pkg-1.0" / "pkg" / "__init__.py").write_text("")
    sdist = LabelledFile("x==1", "pkg-1.0/pkg/a.py", False, "")
    wheel = LabelledFile("x==1", "pkg/a.py", False, "")
    assert realcode.package_root(tmp_path, [sdist]) == tmp_path / "pkg-1.0"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    assert realcode.package_root(tmp_path, [wheel]) == tmp_path


def test_a_repository_is_pinned_to_a_full_commit(tmp_path):
    label = tmp_path / "x.toml"
    label.write_text('spec = "github:some-one/train.py@' + "ab12" * 10 + '"\n[[files]]\npath = "a.py"\n'
                     'positive = false\n', encoding="utf-8")
    (item,) = load(label)
    assert realcode.repository(item.spec) == ("some-one", "train.py", "ab12" * 10)
    label.write_text('spec = "github:some-one/repo@main"\n[[files]]\npath = "a.py"\npositive = false\n', encoding="utf-8")
    with pytest.raises(LabelError, match="is not pinned"):
        load(label)


@pytest.mark.skipif(not KEPT_ASIDE.exists(), reason="../shared is not beside the checkout")
def test_no_corpus_repository_is_kept_aside():
    text = KEPT_ASIDE.read_text(encoding="utf-8")
    # every owner/name the file mentions (its list, and the paragraph of repositories behind packages)
    kept = {name.rstrip(".").lower() for name in re.findall(r"[\w.-]+/[\w.-]+", text)}
    assert len(kept) > 120 and "karpathy/nanogpt" in kept and "allenai/allennlp" in kept
    ours = {"/".join(realcode.repository(item.spec)[:2]).lower() for item in load_all()
            if realcode.repository(item.spec) is not None}
    assert not ours & kept


def _git(*args, cwd):
    import subprocess

    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_a_repository_comes_from_a_local_snapshot_without_its_missing_blobs(tmp_path):
    snapshot = tmp_path / "mirror" / "some-one+repo"
    (snapshot / "src").mkdir(parents=True)
    (snapshot / "src" / "train.py").write_text("import torch\n", encoding="utf-8")
    (snapshot / "data.bin").write_bytes(b"\0" * 100)
    _git("init", "-q", cwd=snapshot)
    _git("add", ".", cwd=snapshot)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c", cwd=snapshot)
    commit = _git("rev-parse", "HEAD", cwd=snapshot)
    blob = _git("rev-parse", "HEAD:data.bin", cwd=snapshot)
    (snapshot / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # a snapshot may lack its largest blobs
    spec = f"github:some-one/repo@{commit}"
    src = realcode.fetch_repository(spec, tmp_path / "work", True, 60, tmp_path / "mirror")
    assert (src / "src" / "train.py").read_text(encoding="utf-8") == "import torch\n"
    assert not (src / "data.bin").exists()
    item = LabelledFile(spec, "src/train.py", False, "")
    assert realcode.package_root(src, [item]) == src
    with pytest.raises(RuntimeError, match="--offline"):
        realcode.fetch_repository(spec.replace(commit, "0" * 40), tmp_path / "work", True, 60, tmp_path / "mirror")


def test_a_repository_comes_from_a_bare_snapshot(tmp_path):
    clone = tmp_path / "clone"
    (clone / "pkg").mkdir(parents=True)
    (clone / "pkg" / "train.py").write_text("opt = None\n", encoding="utf-8")
    _git("init", "-q", cwd=clone)
    _git("add", ".", cwd=clone)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c", cwd=clone)
    commit = _git("rev-parse", "HEAD", cwd=clone)
    (tmp_path / "mirror" / "some-one+repo").mkdir(parents=True)
    _git("clone", "-q", "--bare", str(clone), str(tmp_path / "mirror" / "some-one+repo" / "repo"), cwd=tmp_path)
    src = realcode.fetch_repository(f"github:some-one/repo@{commit}", tmp_path / "work", True, 60, tmp_path / "mirror")
    assert (src / "pkg" / "train.py").read_text(encoding="utf-8") == "opt = None\n"


def test_a_placement_named_by_a_finding_of_another_pair_is_counted_apart_not_as_recall():
    item = _item()
    item.required.append(_pair(10, 16, "move"))
    scored = realcode.match(item, [_finding(10, "DDP101", [12, 16])])
    default = realcode.score([scored], realcode.SELECTIONS["default"])
    assert (default["found"], default["required"], default["named_by_another_pair_finding"]) == (1, 3, 1)
    unnamed = realcode.score([realcode.match(item, [_finding(10, "DDP101", [12])])], realcode.SELECTIONS["default"])
    assert unnamed["named_by_another_pair_finding"] == 0


def test_a_pair_labelled_in_two_files_and_found_in_one_is_counted_apart_not_as_recall():
    # a script's label names the class's lines as its ends (holder_path, placement_path), as the class's does
    script = LabelledFile("x==1", "p/main.py", True, "")
    script.required = [Pair(End("p/a.py", 10, ""), End("p/a.py", 12, ""), "move", "across-modules", "", (3,))]
    klass = _item()
    results = [realcode.match(script, []), realcode.match(klass, [_finding(10, "DDP101", [12])])]
    default = realcode.score(results, realcode.SELECTIONS["default"])
    assert (default["found"], default["required"], default["found_in_another_labelled_file"]) == (1, 3, 1)
    alone = realcode.score(results[:1], realcode.SELECTIONS["default"])
    assert (alone["found"], alone["found_in_another_labelled_file"]) == (0, 0)


def test_a_missed_pair_says_how_its_bug_is_still_reported():
    item = _item()
    item.required.append(_pair(10, 16, "move"))
    scored = realcode.match(item, [_finding(10, "DDP101", [12, 16])])
    chosen = realcode.SELECTIONS["default"].__contains__

    def otherwise(r, i):
        return realcode.reported_otherwise(r, r.item.required[i], lambda f: chosen(f.code),
                                           realcode.matched_ends_of([r], lambda f: chosen(f.code)))

    assert otherwise(scored, 3) == realcode.NAMED
    assert otherwise(scored, 2) is None  # the pair at 20 -> 30: nothing reports it
    script = LabelledFile("x==1", "p/main.py", True, "")
    script.required = [Pair(End("p/a.py", 10, ""), End("p/a.py", 12, ""), "move", "across-modules", "", (3,))]
    missed = realcode.match(script, [])
    ends = realcode.matched_ends_of([missed, scored], lambda f: chosen(f.code))
    assert realcode.reported_otherwise(missed, script.required[0], lambda f: chosen(f.code), ends) == realcode.ELSEWHERE
