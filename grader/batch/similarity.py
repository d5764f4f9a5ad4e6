"""Code similarity across a class, per part, with copydetect (winnowed fingerprints, as MOSS).

Runs on the trusted side over the submissions' clean source copies as text; it never imports
or runs them. The starter code the class was given is boilerplate: what every submission
shares with it does not count as similarity. Neither does code found in more than a small
share of the class (`common_limit`), as MOSS ignores passages found in many programs.

It grows with the class, not its square: each source is tokenised once (in a bounded child,
a submission at a time, and kept in the batch's out folder by its digest, so a re-run
tokenises only new or changed sources), an index from fingerprint to submissions finds the
pairs that share enough fingerprints to be listed at all (`candidate_pairs`), and only those
are compared in detail, with copydetect's own comparison. The tokens, fingerprints and
index are grader.batch.fingerprints; this module reads the sources, compares the pairs it
picks and writes the ranked table and side-by-side pages.
"""

from __future__ import annotations

import html
import logging
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from grader.batch.fingerprints import (
    MIN_SHARE,
    TOKENS_CACHE,
    TokenCache,
    candidate_pairs,
    common_limit,
    part_fingerprints,
    source_digest,
    tokenise_sources,
)
from grader.batch.pages import page_html, submission_label
from grader.course.manifest import Assignment
from grader.intake.submission import prepare_submission
from grader.results.atomic import write_text_atomic

if TYPE_CHECKING:
    from grader.batch.discovery import BatchItem

log = logging.getLogger(__name__)

SIMILARITY_DIR = "similarity"
# The most similar pairs of each part get a side-by-side page and a row in summary.html.
PAIRS_SHOWN_PER_PART = 10
# Fingerprinting is linear but slow (a tokenizer in Python): a file far over any real
# solution's size is named for staff instead of compared, so that no submission can stall the
# class's pass.
MAX_COMPARED_CHARS = 200_000


@dataclass(frozen=True)
class SimilarPair:
    """Two submissions' code of one part, and how much of each the other one covers."""

    part: str
    first: str  # submission keys
    second: str
    # Share of each side's tokens (after the boilerplate is removed) found in the other.
    first_share: float
    second_share: float
    # The side-by-side page, relative to summary.html.
    page: str = ""

    @property
    def score(self) -> float:
        return max(self.first_share, self.second_share)


def pair_file(pair: SimilarPair, rank: int) -> str:
    return f"{SIMILARITY_DIR}/{rank:03d}-{pair.part}.html"


def similarity_html(
    pairs: Sequence[SimilarPair] | None, note: str, names: Mapping[str, str] | None = None
) -> str:
    """The ranked pairs as a table linking each to its side-by-side page (None: not computed,
    which `note` says); `names` gives the student's name for a key (Gradescope's export names
    folders by submission id)."""
    names = names or {}
    text = f"<p class=meta>{html.escape(note)}</p>" if note else ""
    if pairs is None:
        return text
    rows = [pair for pair in pairs if pair.page]
    if len(rows) < len(pairs):
        text += (
            f"<p class=meta>The {PAIRS_SHOWN_PER_PART} most similar pairs of each part are "
            f"shown; similarity.json lists all {len(pairs)}.</p>"
        )
    if not rows:
        return text + "<p>No similar pairs found.</p>"
    body = "".join(
        "<tr>"
        f"<td class=num>{rank}</td><td>{html.escape(pair.part)}</td>"
        f"<td>{submission_label(pair.first, names)}</td>"
        f"<td>{submission_label(pair.second, names)}</td>"
        f"<td class=num>{pair.first_share * 100:.0f}%</td>"
        f"<td class=num>{pair.second_share * 100:.0f}%</td>"
        f'<td><a href="{html.escape(quote(pair.page, safe="/"))}">side by side</a></td></tr>'
        for rank, pair in enumerate(rows, start=1)
    )
    return (
        text + "<table><thead><tr><th class=num>rank</th><th>part</th><th>submission</th>"
        "<th>submission</th><th class=num>first in second</th><th class=num>second in first"
        f"</th><th>view</th></tr></thead><tbody>{body}</tbody></table>"
    )


@dataclass(frozen=True)
class SimilarityResult:
    pairs: tuple[SimilarPair, ...]
    seconds: float
    submissions: int
    # "key/file" of each source too large to compare (MAX_COMPARED_CHARS).
    not_compared: tuple[str, ...] = ()
    # "key/file" of each source of a submission that could not be tokenised within
    # SUBMISSION_SECONDS.
    out_of_time: tuple[str, ...] = ()
    # Code in more submissions than this counted as boilerplate (`common_limit`).
    common_above: int = 0


def part_sources(items: Iterable[BatchItem], assignment: Assignment) -> dict[str, dict[str, str]]:
    """Submission key -> part id -> the clean source text `grade` would run (notebooks too)."""
    sources: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="grader-similarity-") as scratch:
        for index, item in enumerate(items):
            dest = Path(scratch) / str(index)
            try:
                prepared = prepare_submission(item.path, assignment, dest)
            except Exception:  # one submission, whatever it holds, never ends the class's pass
                log.debug("similarity: cannot read %s", item.key, exc_info=True)
                continue
            texts = {}
            for part in assignment.parts:
                path = prepared.files.get(part.file)
                if path is not None:
                    texts[part.id] = path.read_text(encoding="utf-8")
            sources[item.key] = texts
    return sources


def _compared_sources(
    sources: dict[str, dict[str, str]], assignment: Assignment, not_compared: list[str]
) -> dict[str, dict[str, str]]:
    """Key -> part id -> source, for the sources to compare; those too large to compare go
    into `not_compared`."""
    compared: dict[str, dict[str, str]] = {key: {} for key in sources}
    for part in assignment.parts:
        for key in sorted(sources):
            text = sources[key].get(part.id)
            if text is not None and len(text) > MAX_COMPARED_CHARS:
                not_compared.append(f"{key}/{part.file}")
            elif text is not None and text.strip():
                compared[key][part.id] = text
    return compared


def find_similar_pairs(
    sources: dict[str, dict[str, str]],
    assignment: Assignment,
    not_compared: list[str],
    *,
    tokens: TokenCache | None = None,
    out_of_time: list[str] | None = None,
) -> list[tuple[SimilarPair, Any, Any, Any, Any]]:
    """Every pair of submissions whose code of a part mostly appears in the other's, ranked.

    Each entry also carries both fingerprints and their copied slices, for the side-by-side
    page. Text shared with the part's starter file, or found in more than `common_limit`
    submissions, is boilerplate and never counts. Sources over MAX_COMPARED_CHARS go into
    `not_compared`, and those of submissions that could not be tokenised within
    SUBMISSION_SECONDS into `out_of_time`.
    """
    from copydetect import compare_files

    cache = tokens if tokens is not None else TokenCache()
    compared = _compared_sources(sources, assignment, not_compared)
    failed = tokenise_sources({key: list(texts.values()) for key, texts in compared.items()}, cache)
    found = []
    for part in assignment.parts:
        texts = {
            key: compared[key][part.id] for key in sorted(compared) if part.id in compared[key]
        }
        for key in texts:
            if source_digest(texts[key]) in failed and out_of_time is not None:
                out_of_time.append(f"{key}/{part.file}")
        prints = part_fingerprints(part, texts, cache, common_limit(len(sources)), assignment)
        for first, second in candidate_pairs(prints):
            one, two = prints[first], prints[second]
            if not one.hashes or not two.hashes:
                continue
            _, (share_one, share_two), (slices_one, slices_two) = compare_files(one, two)
            if max(share_one, share_two) < MIN_SHARE:
                continue
            pair = SimilarPair(
                part.id, first, second, round(float(share_one), 4), round(float(share_two), 4)
            )
            found.append((pair, one, two, slices_one, slices_two))
    order = {part.id: index for index, part in enumerate(assignment.parts)}
    found.sort(key=lambda entry: (-entry[0].score, order[entry[0].part], entry[0].first))
    return found


def _highlighted(text: str, slices: Any) -> str:
    """`text` escaped, with the copied stretches marked."""
    pieces, position = [], 0
    spans = sorted(zip(slices[0], slices[1], strict=True)) if len(slices) == 2 else []
    for start, end in spans:
        start, end = max(int(start), position), int(end)
        if end <= start:
            continue
        pieces.append(html.escape(text[position:start]))
        pieces.append(f"<mark>{html.escape(text[start:end])}</mark>")
        position = end
    pieces.append(html.escape(text[position:]))
    return "".join(pieces)


def side_by_side_html(
    pair: SimilarPair,
    one: Any,
    two: Any,
    slices_one: Any,
    slices_two: Any,
    names: Mapping[str, str] | None = None,
) -> str:
    first, second = (submission_label(key, names or {}) for key in (pair.first, pair.second))
    body = (
        "<p><a href='../summary.html'>back to the summary</a></p>"
        f"<p>Marked: code found in both, beyond the starter file. {first}: "
        f"{pair.first_share * 100:.0f}% of its code is in {second}; "
        f"{second}: {pair.second_share * 100:.0f}% is in {first}.</p><div class=side>"
        f"<div><h2>{first}</h2><pre>{_highlighted(one.raw_code, slices_one)}"
        f"</pre></div><div><h2>{second}</h2>"
        f"<pre>{_highlighted(two.raw_code, slices_two)}</pre></div></div>"
    )
    return page_html(f"{pair.part}: {pair.first} and {pair.second}", body)


def class_similarity(
    items: Sequence[BatchItem], assignment: Assignment, out_dir: Path
) -> SimilarityResult:
    """Rank similar pairs over the class and write a side-by-side page for each one shown."""
    started = time.monotonic()
    not_compared: list[str] = []
    out_of_time: list[str] = []
    sources = part_sources(items, assignment)
    # Read after the sources: reading them forks a bounded child per submission, and a
    # smaller process forks faster.
    cache = TokenCache(out_dir / TOKENS_CACHE)
    found = find_similar_pairs(
        sources, assignment, not_compared, tokens=cache, out_of_time=out_of_time
    )
    cache.save()
    pairs = []
    folder = out_dir / SIMILARITY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.html"):
        stale.unlink()
    shown_in: dict[str, int] = {}
    names = {item.key: item.student for item in items}
    for rank, (pair, one, two, slices_one, slices_two) in enumerate(found, start=1):
        shown_in[pair.part] = shown_in.get(pair.part, 0) + 1
        if shown_in[pair.part] <= PAIRS_SHOWN_PER_PART:
            shown = replace(pair, page=pair_file(pair, rank))
            write_text_atomic(
                out_dir / shown.page,
                side_by_side_html(shown, one, two, slices_one, slices_two, names),
            )
            pairs.append(shown)
        else:
            pairs.append(pair)
    seconds = round(time.monotonic() - started, 2)
    return SimilarityResult(
        tuple(pairs),
        seconds,
        len(items),
        tuple(not_compared),
        tuple(out_of_time),
        common_limit(len(sources)),
    )
