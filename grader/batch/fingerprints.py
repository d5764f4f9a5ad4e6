"""Code fingerprints for batch's similarity pass, and the index that picks the pairs to compare.

Each source is tokenised as copydetect does, in a bounded child a submission at a time, and
the tokens are kept in the batch's out folder by the digest of their source (`TokenCache`),
so a re-run tokenises only new or changed sources. Fingerprints are built from the tokens
with the starter file's, and those found in much of the class, taken out as boilerplate
(`part_fingerprints`); an index from fingerprint to submissions then finds the pairs that
share enough to be listed at all (`candidate_pairs`). `grader.batch.similarity` compares
those pairs and writes the pages.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course.manifest import Assignment, Part
from grader.intake.bounded import content_key, run_bounded
from grader.results.atomic import write_json_atomic

log = logging.getLogger(__name__)

# copydetect's defaults: matches shorter than NOISE tokens never count, matches of GUARANTEE
# tokens or more are always found.
NOISE_TOKENS = 25
GUARANTEE_TOKENS = 30
# Pairs where neither side has at least this share of its code in the other are not listed.
MIN_SHARE = 0.5
# Tokenising one submission's sources, in a bounded child: real ones take milliseconds, and
# Pygments takes seconds on 200,000 characters of some hostile text. Sources of a submission
# that overruns it are named for staff instead of compared.
SUBMISSION_SECONDS = 5.0
TOKENISE_MEMORY_BYTES = 1 << 30
# Submissions tokenised one after another in one child (a fresh child after a failure).
SUBMISSIONS_PER_CHILD = 100
# A fingerprint in more than this share of the class's submissions (and more than
# MIN_COMMON_SUBMISSIONS of them) is boilerplate the starter file does not hold: code most
# solutions share is no sign of copying, and ignoring it keeps the pairs compared few.
COMMON_SHARE = 0.05
MIN_COMMON_SUBMISSIONS = 20
# Tokens kept between runs, in the batch's out folder, by the digest of their source.
TOKENS_CACHE = ".cache/similarity-tokens.json"


# The base of the k-gram hash below: a large odd constant (the 64-bit FNV prime).
KGRAM_HASH_BASE = 0x100000001B3


def _stable_kgram_hashes(string: str, k: int) -> Any:
    """copydetect's `hashed_kgrams` (the hash of every k characters of a tokenised source),
    with a polynomial hash over the characters' code points, modulo 2**64.

    copydetect hashes each k-gram with Python's `hash()`, which is salted per process: the
    fingerprints winnowing keeps (the smallest hash in each window) then differ from run to
    run, and so do the shares; a pair near the listing bound came and went between two runs
    of the same batch. This hash is the same in every process, and computed in k vector
    operations instead of a Python call per k-gram.
    """
    import numpy as np

    codes = np.frombuffer(string.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    count = len(codes) - k + 1
    if count <= 0:
        return np.array([], dtype=np.int64)
    hashes = np.zeros(count, dtype=np.uint64)
    base = np.uint64(KGRAM_HASH_BASE)
    for offset in range(k):
        hashes = hashes * base + codes[offset : offset + count]
    return hashes.view(np.int64)


def _use_stable_hashes() -> None:
    """Make copydetect's fingerprints the same in every process (`_stable_kgram_hashes`)."""
    import copydetect.utils

    copydetect.utils.hashed_kgrams = _stable_kgram_hashes


def _fingerprint(text: str, name: str, boilerplate: Any) -> Any:
    from copydetect import CodeFingerprint

    _use_stable_hashes()
    return CodeFingerprint(
        name,
        NOISE_TOKENS,
        GUARANTEE_TOKENS - NOISE_TOKENS + 1,
        boilerplate=boilerplate,
        language="python",
        fp=io.StringIO(text),
    )


@dataclass(frozen=True)
class Tokens:
    """copydetect's `filter_code` of one source: names, strings and layout normalised away."""

    filtered: str
    # Nx2: how many characters filtering removed up to each point of `filtered`, to mark the
    # copied stretches in the source itself.
    offsets: Any


def _tokens_entry(filtered: str, offsets: Any) -> list[str]:
    """`filter_code`'s output as JSON: the offsets as base64 of little-endian int32 pairs,
    a string where a list of lists would cost a Python object per number to read back."""
    import numpy as np

    packed = np.asarray(offsets, dtype="<i4").tobytes() if len(offsets) else b""
    return [filtered, base64.b64encode(packed).decode("ascii")]


def _tokens(entry: Any) -> Tokens | None:
    """Tokens from `_tokens_entry`'s form; None if it is not that."""
    import numpy as np

    if not (
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], str)
    ):
        return None
    try:
        packed = base64.b64decode(entry[1], validate=True)
    except ValueError:
        return None
    if len(packed) % 8:
        return None
    if not packed:  # as `filter_code` gives for text it could not tokenise
        return Tokens(entry[0], np.array([]))
    offsets = np.frombuffer(packed, dtype="<i4").astype(np.int64).reshape(-1, 2)
    return Tokens(entry[0], offsets)


def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class TokenCache:
    """Tokens by the digest of their source, kept in a file between runs of one batch.

    Tokenising is nearly all of fingerprinting's cost; the fingerprints themselves are
    computed anew from the tokens (in a fraction of a millisecond per source). Only the
    sources of the latest run are saved.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._stored: dict[str, Any] = self._read() if path is not None else {}
        self._used: dict[str, Any] = {}
        self._tokens: dict[str, Tokens] = {}

    def _read(self) -> dict[str, Any]:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if isinstance(data, dict) and data.get("format") == _tokens_format():
            sources = data.get("sources")
            return sources if isinstance(sources, dict) else {}
        return {}

    def get(self, digest: str) -> Tokens | None:
        if digest not in self._tokens and digest in self._stored:
            self.put(digest, self._stored[digest])
        return self._tokens.get(digest)

    def put(self, digest: str, entry: Any) -> None:
        tokens = _tokens(entry)
        if tokens is not None:
            self._tokens[digest] = tokens
            self._used[digest] = entry

    def save(self) -> None:
        if self.path is None:
            return
        data = {"format": _tokens_format(), "sources": self._used}
        try:
            write_json_atomic(self.path, data)
        except OSError as error:  # the next run tokenises again, nothing worse
            log.warning("could not keep the similarity tokens in %s: %s", self.path, error)


def _tokens_format() -> str:
    """What the kept tokens depend on: copydetect's filter and Pygments' lexer."""
    import copydetect
    import pygments

    return f"copydetect {copydetect.__version__} pygments {pygments.__version__} python"


def _tokenise_task(texts: list[str]) -> Callable[[], list[Any]]:
    """One submission's sources tokenised as copydetect does, for a bounded child."""
    from copydetect.utils import filter_code

    def task() -> list[Any]:
        entries: list[Any] = []
        for text in texts:
            try:
                filtered, offsets = filter_code(text, "source.py", language="python")
                entries.append(_tokens_entry(filtered, offsets))
            except Exception:  # a source copydetect cannot read is left out, not fatal
                entries.append(None)
        return entries

    return task


def tokenise_sources(texts: dict[str, list[str]], cache: TokenCache) -> set[str]:
    """Tokenise each submission's sources (key -> texts) not in `cache` yet, into it.

    Each submission is one task bounded by SUBMISSION_SECONDS; returns the digests of the
    sources of submissions that overran it (or their child's memory bound), which stay
    untokenised.
    """
    tasks, batches, keys = [], [], []
    scheduled: set[str] = set()
    for key in sorted(texts):
        todo = {}
        for text in texts[key]:
            digest = source_digest(text)
            if digest not in scheduled and cache.get(digest) is None:
                todo[digest] = text
                scheduled.add(digest)
        if todo:
            tasks.append(_tokenise_task(list(todo.values())))
            batches.append(list(todo))
            keys.append(content_key("similarity tokens", *todo))
    failed: set[str] = set()
    for first in range(0, len(tasks), SUBMISSIONS_PER_CHILD):
        chunk = slice(first, first + SUBMISSIONS_PER_CHILD)
        outcomes = run_bounded(
            tasks[chunk],
            seconds=SUBMISSION_SECONDS,
            memory_bytes=TOKENISE_MEMORY_BYTES,
            keys=keys[chunk],
        )
        for digests, outcome in zip(batches[chunk], outcomes, strict=True):
            entries = outcome.value
            if outcome.failure or not (isinstance(entries, list) and len(entries) == len(digests)):
                failed.update(digests)
                continue
            for digest, entry in zip(digests, entries, strict=True):
                cache.put(digest, entry)
    return failed


def _fingerprint_of(text: str, tokens: Tokens, name: str, boilerplate: Any) -> Any:
    """`_fingerprint(text, name, boilerplate)`, from tokens made beforehand."""
    from copydetect import CodeFingerprint

    _use_stable_hashes()
    fingerprint = CodeFingerprint(
        name,
        NOISE_TOKENS,
        GUARANTEE_TOKENS - NOISE_TOKENS + 1,
        boilerplate=boilerplate,
        filter=False,
        fp=io.StringIO(tokens.filtered),
    )
    # What the constructor keeps from tokenising when it tokenises the text itself.
    fingerprint.raw_code = text
    fingerprint.offsets = tokens.offsets
    return fingerprint


def common_limit(submissions: int) -> int:
    """How many submissions may share a fingerprint before it counts as boilerplate."""
    return max(MIN_COMMON_SUBMISSIONS, int(COMMON_SHARE * submissions))


def candidate_pairs(prints: dict[str, Any]) -> list[tuple[str, str]]:
    """The pairs of `prints` (key -> fingerprint) that `compare_files` could list, in order.

    `compare_files` marks the k tokens from each position of a fingerprint both sides hold,
    so a side's copied tokens are at most k times its positions whose fingerprint the other
    side holds, and a pair is listed only where one side's copied tokens reach MIN_SHARE of
    its `token_coverage`. An index from fingerprint to submissions counts those positions
    for every pair that shares any; the pairs short of the bound on both sides are left out,
    and no pair that `compare_files` would list is.
    """
    import numpy as np

    keys = sorted(prints)
    count = len(keys)
    if count < 2:
        return []
    # One entry per submission and fingerprint it holds: who, which, at how many positions.
    holder = np.concatenate(
        [np.full(len(prints[key].hash_idx), index) for index, key in enumerate(keys)]
    )
    value = np.concatenate(
        [np.fromiter(prints[key].hash_idx, np.int64, len(prints[key].hash_idx)) for key in keys]
    )
    positions = np.concatenate(
        [np.fromiter(map(len, prints[key].hash_idx.values()), np.int64) for key in keys]
    )
    order = np.argsort(value, kind="stable")
    holder, value, positions = holder[order], value[order], positions[order]
    starts = np.flatnonzero(np.r_[True, value[1:] != value[:-1]])
    sizes = np.diff(np.r_[starts, len(value)])
    # Every ordered pair (a, b) of holders of one fingerprint: a's positions of it, to add up.
    pair_codes, pair_positions = [], []
    for size in np.unique(sizes[sizes > 1]):
        members = starts[sizes == size][:, None] + np.arange(size)
        owners, held = holder[members], positions[members]
        first = np.broadcast_to(owners[:, :, None], (len(members), size, size))
        second = np.broadcast_to(owners[:, None, :], (len(members), size, size))
        apart = first != second
        pair_codes.append(first[apart] * count + second[apart])
        pair_positions.append(np.broadcast_to(held[:, :, None], first.shape)[apart])
    if not pair_codes:
        return []
    codes, where = np.unique(np.concatenate(pair_codes), return_inverse=True)
    shared = np.bincount(where, weights=np.concatenate(pair_positions))
    first, second = codes // count, codes % count
    k = np.array([prints[key].k for key in keys], dtype=np.float64)
    coverage = np.array([prints[key].token_coverage for key in keys], dtype=np.float64)
    may_reach = k[first] * shared >= MIN_SHARE * coverage[first]
    low, high = np.minimum(first, second)[may_reach], np.maximum(first, second)[may_reach]
    pairs = sorted(set(zip(low.tolist(), high.tolist(), strict=True)))
    return [(keys[i], keys[j]) for i, j in pairs]


def part_fingerprints(
    part: Part, texts: dict[str, str], cache: TokenCache, limit: int, assignment: Assignment
) -> dict[str, Any]:
    """Key -> the fingerprint of its source of `part`, for the sources `cache` has tokens of.

    The starter file's fingerprints are boilerplate, and so are those more than `limit`
    submissions hold: they are taken out of each fingerprint, as copydetect's boilerplate is.
    """
    from copydetect.utils import get_token_coverage

    starter = assignment.directory / part.file
    boilerplate: Any = []
    if starter.is_file():
        boilerplate = _fingerprint(starter.read_text(encoding="utf-8"), part.file, None).hashes
        boilerplate = sorted(boilerplate)
    prints = {}
    for key, text in texts.items():
        tokens = cache.get(source_digest(text))
        try:
            if tokens is not None:
                prints[key] = _fingerprint_of(text, tokens, f"{key}/{part.file}", boilerplate)
        except Exception:  # a source copydetect cannot read is left out, not fatal
            log.debug("similarity: cannot fingerprint %s of %s", part.file, key)
    held = Counter(value for fingerprint in prints.values() for value in fingerprint.hashes)
    common = {value for value, count in held.items() if count > limit}
    for fingerprint in prints.values():
        if common and not fingerprint.hashes.isdisjoint(common):
            fingerprint.hashes -= common
            fingerprint.hash_idx = {
                value: positions
                for value, positions in fingerprint.hash_idx.items()
                if value not in common
            }
            fingerprint.token_coverage = get_token_coverage(
                fingerprint.hash_idx, fingerprint.k, len(fingerprint.filtered_code)
            )
    return prints
