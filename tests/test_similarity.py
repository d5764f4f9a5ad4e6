"""Code similarity through an index: the pairs comparing every pair would list, copies found
past renamed names and reordered functions, code most of the class shares set aside, tokens
kept between runs, and a time bound per submission."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import astuple
from pathlib import Path
from typing import Any

import pytest

from grader.batch import fingerprints, similarity
from grader.batch.discovery import BatchItem
from grader.course.manifest import load_assignment
from tests.support import COURSE_ROOT, SOLUTIONS_DIR

ASSIGNMENT = load_assignment("pytorch_basics")
CORPUS = COURSE_ROOT / "tests" / "submissions"
PART = ASSIGNMENT.parts[0]


def reference(file: str) -> str:
    return (SOLUTIONS_DIR / file).read_text(encoding="utf-8")


def generated_function(rng: random.Random) -> str:
    """A function of arithmetic no other call gives: numbers with random digits throughout."""
    lines = [f"def step_{rng.randrange(10**6)}(inputs, scale):", "    total = inputs"]
    for _ in range(8):
        op = rng.choice("+-*/")
        lines.append(
            f"    total = total {op} scale * {rng.uniform(0, 100):.3f} + {rng.randrange(999)}"
        )
    return "\n".join([*lines, "    return total", ""])


def every_pair(sources: dict[str, dict[str, str]]) -> list[tuple[Any, ...]]:
    """What comparing every pair with copydetect lists, ranked as `find_similar_pairs` ranks."""
    from copydetect import compare_files

    found = []
    for part in ASSIGNMENT.parts:
        starter = (ASSIGNMENT.directory / part.file).read_text(encoding="utf-8")
        boilerplate = sorted(fingerprints._fingerprint(starter, part.file, None).hashes)
        prints = {
            key: fingerprints._fingerprint(texts[part.id], key, boilerplate)
            for key, texts in sorted(sources.items())
            if texts.get(part.id, "").strip()
        }
        keys = sorted(prints)
        for index, first in enumerate(keys):
            for second in keys[index + 1 :]:
                one, two = prints[first], prints[second]
                if not one.hashes or not two.hashes:
                    continue
                _, shares, _ = compare_files(one, two)
                if max(shares) >= fingerprints.MIN_SHARE:
                    pair = similarity.SimilarPair(
                        part.id,
                        first,
                        second,
                        round(float(shares[0]), 4),
                        round(float(shares[1]), 4),
                    )
                    found.append(pair)
    order = {part.id: index for index, part in enumerate(ASSIGNMENT.parts)}
    found.sort(key=lambda pair: (-pair.score, order[pair.part], pair.first))
    return [astuple(pair) for pair in found]


def test_the_index_lists_exactly_the_pairs_comparing_every_pair_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The corpus laid over the reference, each source thinned and padded at random, so that
    # shares spread on both sides of the 50% a pair needs.
    rng = random.Random(7)
    sources: dict[str, dict[str, str]] = {}
    for case in sorted(path for path in CORPUS.iterdir() if path.is_dir()):
        texts = {}
        for part in ASSIGNMENT.parts:
            own = case / part.file
            text = own.read_text(encoding="utf-8") if own.is_file() else reference(part.file)
            keep = rng.uniform(0.3, 1.0)
            lines = [line for line in text.splitlines() if rng.random() < keep]
            lines += [generated_function(rng) for _ in range(rng.randrange(3))]
            texts[part.id] = "\n".join(lines)
        sources[case.name] = texts
    # Comparing every pair sets nothing aside but the starter file.
    monkeypatch.setattr(fingerprints, "MIN_COMMON_SUBMISSIONS", len(sources))
    compared: list[tuple[str, str]] = []
    real_candidates = fingerprints.candidate_pairs

    def candidates(prints: dict[str, Any]) -> list[tuple[str, str]]:
        found = real_candidates(prints)
        compared.extend(found)
        return found

    monkeypatch.setattr(similarity, "candidate_pairs", candidates)
    found = similarity.find_similar_pairs(sources, ASSIGNMENT, [])

    expected = every_pair(sources)
    assert [astuple(entry[0]) for entry in found] == expected
    listed = len(expected)
    all_pairs = len(sources) * (len(sources) - 1) // 2 * len(ASSIGNMENT.parts)
    # Not a vacuous check: some pairs were listed, and the index spared some comparisons.
    assert 0 < listed < len(compared) < all_pairs


def test_code_more_submissions_share_than_the_limit_is_boilerplate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(3)
    shared_by_all = "".join(generated_function(rng) for _ in range(3))
    copied = "".join(generated_function(rng) for _ in range(3))
    sources = {
        f"s{index:02d}": {PART.id: shared_by_all + generated_function(rng)}
        for index in range(fingerprints.MIN_COMMON_SUBMISSIONS + 5)
    }
    for key in ("s03", "s17"):
        sources[key][PART.id] += copied
    found = similarity.find_similar_pairs(sources, ASSIGNMENT, [])
    # Three quarters of every submission is code the whole class holds: only the copy is
    # listed, its shares counting the rest of the code.
    assert [(pair.first, pair.second) for pair, *_ in found] == [("s03", "s17")]
    assert min(found[0][0].first_share, found[0][0].second_share) >= fingerprints.MIN_SHARE
    # Counted as code of its own, the code everyone holds would list every pair.
    monkeypatch.setattr(fingerprints, "MIN_COMMON_SUBMISSIONS", len(sources))
    every = similarity.find_similar_pairs(sources, ASSIGNMENT, [])
    assert len(every) == len(sources) * (len(sources) - 1) // 2


def disguised(text: str) -> str:
    """Every defined name changed, and the functions in reverse order."""
    head, *functions = text.split("\ndef ")
    renamed = "\ndef ".join(reversed(functions))
    for name in ("forward_backward", "train_manual", "relu", "loss", "grad"):
        renamed = renamed.replace(name, f"my_{name}")
    return head + "\ndef " + renamed


def write_class(root: Path, files: dict[str, dict[str, str]]) -> list[BatchItem]:
    items = []
    for key, texts in sorted(files.items()):
        folder = root / key
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (folder / name).write_text(text, encoding="utf-8")
        items.append(BatchItem(key, folder))
    return items


def class_files(count: int) -> dict[str, dict[str, str]]:
    """`count` submissions of generated code, and alice's manual_backprop.py copied by bob."""
    rng = random.Random(count)
    files = {
        f"s{index:02d}": {
            part.file: generated_function(rng) + generated_function(rng)
            for part in ASSIGNMENT.parts
        }
        for index in range(count)
    }
    files["alice"] = {"manual_backprop.py": reference("manual_backprop.py")}
    files["bob"] = {"manual_backprop.py": disguised(reference("manual_backprop.py"))}
    return files


def test_a_rerun_tokenises_only_new_or_changed_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokenised: list[str] = []
    real_task = fingerprints._tokenise_task

    def counting(texts: list[str]) -> Callable[[], list[Any]]:
        tokenised.extend(texts)
        return real_task(texts)

    monkeypatch.setattr(fingerprints, "_tokenise_task", counting)
    files = class_files(4)
    items = write_class(tmp_path / "class", files)
    out = tmp_path / "out"
    first = similarity.class_similarity(items, ASSIGNMENT, out)
    assert len(tokenised) == sum(len(texts) for texts in files.values())
    assert [(p.part, p.first, p.second) for p in first.pairs] == [
        ("manual_backprop", "alice", "bob")
    ]

    tokenised.clear()
    changed = files["s02"]["two_layer_net.py"] + "\nextra = 1\n"
    (tmp_path / "class" / "s02" / "two_layer_net.py").write_text(changed, encoding="utf-8")
    again = similarity.class_similarity(items, ASSIGNMENT, out)
    assert tokenised == [changed]
    assert again.pairs == first.pairs


def test_a_submission_too_slow_to_tokenise_is_named_and_the_rest_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grader.batch.run import SIMILARITY_FILE, _similarity

    # Pygments takes seconds over 190,000 characters of `$` (each an error token), and a
    # submission may hold six such files; the bound here is half a second.
    monkeypatch.setattr(fingerprints, "SUBMISSION_SECONDS", 0.5)
    slow = "$" * 190_000
    files = class_files(2)
    files["slow"] = {part.file: slow for part in ASSIGNMENT.parts}
    items = write_class(tmp_path / "class", files)
    pairs, note = _similarity(items, ASSIGNMENT, tmp_path / "out", enabled=True)

    written = json.loads((tmp_path / "out" / SIMILARITY_FILE).read_text())
    expected = [f"slow/{part.file}" for part in ASSIGNMENT.parts]
    assert written["out_of_time"] == expected
    assert "not tokenised within" in note and "slow/manual_backprop.py" in note
    assert pairs is not None
    assert [(p.part, p.first, p.second) for p in pairs] == [("manual_backprop", "alice", "bob")]


def test_the_kept_tokens_are_read_as_data(tmp_path: Path) -> None:
    cache_file = tmp_path / "tokens.json"
    cache = fingerprints.TokenCache(cache_file)
    fingerprints.tokenise_sources({"a": [reference("manual_backprop.py")]}, cache)
    cache.save()
    data = json.loads(cache_file.read_text())
    (digest,) = data["sources"]
    # A damaged or foreign entry is tokenised again, never trusted.
    for damaged in (["x", "not base64!"], ["x", "AAAA"], ["x"], "x", None):
        data["sources"][digest] = damaged
        cache_file.write_text(json.dumps(data))
        assert fingerprints.TokenCache(cache_file).get(digest) is None


FINGERPRINT_IN_A_FRESH_PROCESS = """
import sys
from grader.batch import fingerprints
text = open(sys.argv[1], encoding="utf-8").read()
print(sorted(int(h) for h in fingerprints._fingerprint(text, "part.py", []).hashes))
"""


def test_fingerprints_are_the_same_in_every_process(tmp_path: Path) -> None:
    """copydetect's own k-gram hash is Python's hash(), salted per process: the fingerprints
    winnowing keeps, and so the shares and which pairs are listed, changed between runs."""
    import os
    import subprocess
    import sys

    source = tmp_path / "source.py"
    source.write_text(reference("custom_sigmoid.py"), encoding="utf-8")
    runs = [
        subprocess.run(
            [sys.executable, "-c", FINGERPRINT_IN_A_FRESH_PROCESS, str(source)],
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(COURSE_ROOT)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1] and len(json.loads(runs[0])) > 10
